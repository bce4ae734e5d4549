-- The port fixture's schema, with a seed row: set-up work, run by sqlx::migrate!().run(&pool).
CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, views INTEGER NOT NULL DEFAULT 0);
CREATE TABLE events (id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL, what TEXT NOT NULL);
INSERT INTO notes (title) VALUES ('welcome');

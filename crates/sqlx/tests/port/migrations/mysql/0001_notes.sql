-- The port fixture's schema, with a seed row: set-up work, run by sqlx::migrate!().run(&pool).
CREATE TABLE notes (id BIGINT AUTO_INCREMENT PRIMARY KEY, title TEXT NOT NULL, views BIGINT NOT NULL DEFAULT 0);
CREATE TABLE events (id BIGINT AUTO_INCREMENT PRIMARY KEY, note_id BIGINT NOT NULL, what TEXT NOT NULL);
INSERT INTO notes (title) VALUES ('welcome');

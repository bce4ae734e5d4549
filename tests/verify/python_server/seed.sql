-- The fixture server's database: created from this file when the database has no tables.
CREATE TABLE items (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    qty INTEGER NOT NULL DEFAULT 0,
    views INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE tags (item_id INTEGER NOT NULL, tag TEXT NOT NULL);
CREATE TABLE searches (id INTEGER PRIMARY KEY AUTOINCREMENT, query TEXT NOT NULL);
-- Bookkeeping: list_items appends to it; verify runs with --ignore-table access_log.
CREATE TABLE access_log (tool TEXT NOT NULL);
INSERT INTO items (id, name, qty) VALUES
    (1, 'anchor', 3), (2, 'buoy', 0), (3, 'compass', 5), (4, 'dinghy', 0), (5, 'ensign', 2),
    (6, 'fender', 1), (7, 'galley', 4), (8, 'hammock', 0), (9, 'jib', 7), (10, 'keel', 1);
INSERT INTO tags (item_id, tag) VALUES (1, 'heavy'), (3, 'navigation');

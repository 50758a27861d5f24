-- A record's values are kept as SQLite's binary JSON (JSONB) from here on: its JSON functions read
-- one member of JSONB without parsing the whole document, and the filters of searches and bulk
-- selections read one member of every row they test (src/db/binary-json.ts). The declared type
-- stays text (SQLite keeps a blob in a text column as it is); the application writes the column
-- with jsonb() and reads it with json(). Rows written before are converted here, once.
UPDATE `records` SET `vals` = jsonb(`vals`) WHERE typeof(`vals`) = 'text';

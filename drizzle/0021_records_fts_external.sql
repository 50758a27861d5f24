-- The records' full-text index keeps no copy of the text it indexes: its content is the
-- record_search table itself (an external-content FTS5 table), which holds the same title and body
-- under the same row id. The copy was a second table as large as record_search (1 GB of a 7.1 GB
-- database at 1,000,000 records), written again at every change of a record's text. FTS5 reads the
-- content only to rebuild the index or check it; searches read the index alone.
--
-- An external-content index is told what it indexed when a row goes: deletes give the old values
-- ('delete'), here for the cascades by the trigger, and the records code does the same for an
-- update (records.service.ts: writeSearch). The index is made again from record_search, once
-- (an INSERT into an external-content index writes index entries only).
DROP TRIGGER IF EXISTS `record_search_ad`;--> statement-breakpoint
DROP TABLE `records_fts`;--> statement-breakpoint
CREATE VIRTUAL TABLE `records_fts` USING fts5(project_gid, language, title, body, content = 'record_search', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2');--> statement-breakpoint
INSERT INTO `records_fts` (rowid, project_gid, language, title, body) SELECT `id`, `project_gid`, `language`, `title`, `body` FROM `record_search` ORDER BY `id`;--> statement-breakpoint
INSERT INTO `records_fts` (`records_fts`) VALUES ('optimize');--> statement-breakpoint
CREATE TRIGGER `record_search_ad` AFTER DELETE ON `record_search` BEGIN
  INSERT INTO records_fts(records_fts, rowid, project_gid, language, title, body) VALUES ('delete', old.id, old.project_gid, old.language, old.title, old.body);
END;

-- Search documents are numbered by their record and language: id = record_id * 64 + slot, the
-- slot being 0 for the shared document and a language's place in SLOTTED (values.service.ts) plus
-- one. A search then reads a hit's record and language from the index's rowid alone, and the
-- record_search_map index that looked them up is no longer needed. Rows of a language Apis does not
-- know (none are written) are left out; the full-text index is made again under the new rowids.
DROP INDEX `record_search_map`;--> statement-breakpoint
DELETE FROM `record_search` WHERE `language` NOT IN ('*', 'da', 'de', 'de-at', 'de-ch', 'de-de', 'de-lu', 'el', 'en', 'en-gb', 'en-ie', 'en-us', 'es', 'es-es', 'fi', 'fr', 'fr-be', 'fr-ch', 'fr-fr', 'fr-lu', 'is', 'it', 'it-ch', 'it-it', 'lb-lu', 'nb', 'nl', 'nl-be', 'nl-nl', 'pl', 'pt', 'sv');--> statement-breakpoint
UPDATE `record_search` SET `id` = -(`record_id` * 64 + CASE `language` WHEN '*' THEN 0 WHEN 'da' THEN 1 WHEN 'de' THEN 2 WHEN 'de-at' THEN 3 WHEN 'de-ch' THEN 4 WHEN 'de-de' THEN 5 WHEN 'de-lu' THEN 6 WHEN 'el' THEN 7 WHEN 'en' THEN 8 WHEN 'en-gb' THEN 9 WHEN 'en-ie' THEN 10 WHEN 'en-us' THEN 11 WHEN 'es' THEN 12 WHEN 'es-es' THEN 13 WHEN 'fi' THEN 14 WHEN 'fr' THEN 15 WHEN 'fr-be' THEN 16 WHEN 'fr-ch' THEN 17 WHEN 'fr-fr' THEN 18 WHEN 'fr-lu' THEN 19 WHEN 'is' THEN 20 WHEN 'it' THEN 21 WHEN 'it-ch' THEN 22 WHEN 'it-it' THEN 23 WHEN 'lb-lu' THEN 24 WHEN 'nb' THEN 25 WHEN 'nl' THEN 26 WHEN 'nl-be' THEN 27 WHEN 'nl-nl' THEN 28 WHEN 'pl' THEN 29 WHEN 'pt' THEN 30 WHEN 'sv' THEN 31 END);--> statement-breakpoint
UPDATE `record_search` SET `id` = -`id`;--> statement-breakpoint
DROP TABLE `records_fts`;--> statement-breakpoint
CREATE VIRTUAL TABLE `records_fts` USING fts5(project_gid, language, title, body, tokenize = 'unicode61 remove_diacritics 2');--> statement-breakpoint
INSERT INTO `records_fts` (rowid, project_gid, language, title, body) SELECT `id`, `project_gid`, `language`, `title`, `body` FROM `record_search` ORDER BY `id`;--> statement-breakpoint
INSERT INTO `records_fts` (`records_fts`) VALUES ('optimize');

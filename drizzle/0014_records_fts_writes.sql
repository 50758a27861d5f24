-- The records' full-text rows are written by the records code itself (records.service.ts:
-- writeSearch, insertRecordsIn), next to their record_search row, instead of by AFTER INSERT /
-- AFTER UPDATE triggers on record_search. A statement with a trigger runs under a statement
-- savepoint, and FTS5 writes its pending terms out as a new segment at every savepoint: one
-- segment per record, merged again and again (an Excel import of 10,000 rows spent about half of
-- its insert time there). The delete trigger stays: deleting records cascades to record_search.
DROP TRIGGER IF EXISTS `record_search_ai`;--> statement-breakpoint
DROP TRIGGER IF EXISTS `record_search_au`;

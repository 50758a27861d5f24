-- Full-text index of asset names and metadata values, kept by triggers (rowid = assets.id).
-- assets_fts folds case and diacritics (unicode61 remove_diacritics 2) for every language;
-- assets_fts_en adds the Porter stemmer for English searches. project_gid is an indexed column
-- so a MATCH is scoped to one project inside the index.
CREATE VIRTUAL TABLE `assets_fts` USING fts5(project_gid, name, meta, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
--> statement-breakpoint
CREATE VIRTUAL TABLE `assets_fts_en` USING fts5(project_gid, name, meta, tokenize = 'porter unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE TRIGGER `assets_fts_ai` AFTER INSERT ON `assets` BEGIN
  INSERT INTO assets_fts(rowid, project_gid, name, meta) VALUES (new.id, new.project_gid, new.name,
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), ''));
  INSERT INTO assets_fts_en(rowid, project_gid, name, meta) VALUES (new.id, new.project_gid, new.name,
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), ''));
END;
--> statement-breakpoint
CREATE TRIGGER `assets_fts_ad` AFTER DELETE ON `assets` BEGIN
  DELETE FROM assets_fts WHERE rowid = old.id;
  DELETE FROM assets_fts_en WHERE rowid = old.id;
END;
--> statement-breakpoint
CREATE TRIGGER `assets_fts_au` AFTER UPDATE OF `name`, `metadata`, `extracted`, `project_gid` ON `assets` BEGIN
  UPDATE assets_fts SET project_gid = new.project_gid, name = new.name, meta =
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), '')
    WHERE rowid = new.id;
  UPDATE assets_fts_en SET project_gid = new.project_gid, name = new.name, meta =
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), '')
    WHERE rowid = new.id;
END;

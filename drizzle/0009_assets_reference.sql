ALTER TABLE `asset_versions` ADD `facts` text;--> statement-breakpoint
ALTER TABLE `assets` ADD `pathname` text;--> statement-breakpoint
ALTER TABLE `assets` ADD `title` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `assets` ADD `description` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `assets` ADD `transforms` text;--> statement-breakpoint
ALTER TABLE `assets` ADD `facts` text;--> statement-breakpoint
CREATE INDEX `assets_project_pathname` ON `assets` (`project_gid`,`pathname`);--> statement-breakpoint
-- The full-text index also holds titles and descriptions (every language), and of the metadata
-- fields ({"type", "is_localized", "value"}) only the values.
DROP TRIGGER `assets_fts_ai`;--> statement-breakpoint
DROP TRIGGER `assets_fts_au`;--> statement-breakpoint
CREATE TRIGGER `assets_fts_ai` AFTER INSERT ON `assets` BEGIN
  INSERT INTO assets_fts(rowid, project_gid, name, meta) VALUES (new.id, new.project_gid, new.name,
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real') AND NOT (key = 'type' AND path <> '$')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.title) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.description) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), ''));
  INSERT INTO assets_fts_en(rowid, project_gid, name, meta) VALUES (new.id, new.project_gid, new.name,
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real') AND NOT (key = 'type' AND path <> '$')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.title) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.description) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), ''));
END;
--> statement-breakpoint
CREATE TRIGGER `assets_fts_au` AFTER UPDATE OF `name`, `metadata`, `extracted`, `title`, `description`, `project_gid` ON `assets` BEGIN
  UPDATE assets_fts SET project_gid = new.project_gid, name = new.name, meta =
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real') AND NOT (key = 'type' AND path <> '$')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.title) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.description) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), '')
    WHERE rowid = new.id;
  UPDATE assets_fts_en SET project_gid = new.project_gid, name = new.name, meta =
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.metadata) WHERE type IN ('text', 'integer', 'real') AND NOT (key = 'type' AND path <> '$')), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.title) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.description) WHERE type = 'text'), '') || ' ' ||
    coalesce((SELECT group_concat(value, ' ') FROM json_tree(new.extracted) WHERE type = 'text'), '')
    WHERE rowid = new.id;
END;

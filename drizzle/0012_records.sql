CREATE TABLE `record_orderings` (
	`record_id` integer NOT NULL,
	`project_gid` text NOT NULL,
	`parent` text NOT NULL,
	`ordering` text NOT NULL,
	`pos` integer NOT NULL,
	PRIMARY KEY(`record_id`, `ordering`),
	FOREIGN KEY (`record_id`) REFERENCES `records`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `record_orderings_place` ON `record_orderings` (`parent`,`ordering`,`pos`,`record_id`);--> statement-breakpoint
CREATE TABLE `record_search` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`record_id` integer NOT NULL,
	`project_gid` text NOT NULL,
	`language` text NOT NULL,
	`title` text DEFAULT '' NOT NULL,
	`body` text DEFAULT '' NOT NULL,
	FOREIGN KEY (`record_id`) REFERENCES `records`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `record_search_record` ON `record_search` (`record_id`,`language`);--> statement-breakpoint
CREATE TABLE `records` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`gid` text NOT NULL,
	`project_gid` text NOT NULL,
	`parent` text,
	`canonical` text NOT NULL,
	`is_link` integer DEFAULT false NOT NULL,
	`definition` text NOT NULL,
	`treelevel` integer DEFAULT 0 NOT NULL,
	`path` text NOT NULL,
	`childcount` integer DEFAULT 0 NOT NULL,
	`status` text DEFAULT 'published' NOT NULL,
	`channels` text NOT NULL,
	`vals` text NOT NULL,
	`checks` text NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `records_gid` ON `records` (`gid`);--> statement-breakpoint
CREATE INDEX `records_parent` ON `records` (`parent`,`status`);--> statement-breakpoint
CREATE INDEX `records_canonical` ON `records` (`canonical`);--> statement-breakpoint
CREATE INDEX `records_project` ON `records` (`project_gid`,`id`);--> statement-breakpoint
CREATE INDEX `records_definition` ON `records` (`project_gid`,`definition`);--> statement-breakpoint
-- Full-text index of record titles and text values per language, kept by triggers on
-- record_search (rowid = record_search.id). unicode61 with remove_diacritics 2 folds case and
-- accents (é = e, ß stays), so "creme" finds "Crème". project_gid and language are indexed columns,
-- so a MATCH is scoped to one project and one language inside the index.
CREATE VIRTUAL TABLE `records_fts` USING fts5(project_gid, language, title, body, tokenize = 'unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE TRIGGER `record_search_ai` AFTER INSERT ON `record_search` BEGIN
  INSERT INTO records_fts(rowid, project_gid, language, title, body) VALUES (new.id, new.project_gid, new.language, new.title, new.body);
END;
--> statement-breakpoint
CREATE TRIGGER `record_search_ad` AFTER DELETE ON `record_search` BEGIN
  DELETE FROM records_fts WHERE rowid = old.id;
END;
--> statement-breakpoint
CREATE TRIGGER `record_search_au` AFTER UPDATE ON `record_search` BEGIN
  UPDATE records_fts SET project_gid = new.project_gid, language = new.language, title = new.title, body = new.body WHERE rowid = new.id;
END;

DROP INDEX `records_parent`;--> statement-breakpoint
DROP INDEX `records_canonical`;--> statement-breakpoint
CREATE INDEX `records_parent` ON `records` (`parent`,`status`,`channels`);--> statement-breakpoint
CREATE INDEX `records_canonical` ON `records` (`canonical`,`is_link`);--> statement-breakpoint
CREATE INDEX `record_search_map` ON `record_search` (`id`,`language`,`project_gid`,`record_id`);
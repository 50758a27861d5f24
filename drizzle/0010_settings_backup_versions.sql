-- Issue 9: backups get the reference's integer versions, numbered per project in the order they
-- were made; `created_by` becomes the client's own words (the user's name for existing backups,
-- "Apis scheduler" for scheduled ones) and the starting user moves to `started_by`.
ALTER TABLE `projects` ADD `next_backup_version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `backups` ADD `version` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `backups` ADD `started_by` text;--> statement-breakpoint
UPDATE `backups` SET `started_by` = `created_by`;--> statement-breakpoint
UPDATE `backups` SET `version` = (SELECT count(*) FROM `backups` AS b2 WHERE b2.project_gid = `backups`.project_gid
  AND (b2.created_on < `backups`.created_on OR (b2.created_on = `backups`.created_on AND b2.gid <= `backups`.gid)));--> statement-breakpoint
UPDATE `backups` SET `created_by` = CASE WHEN `scheduled` THEN 'Apis scheduler'
  ELSE coalesce((SELECT coalesce(nullif(u.name, ''), u.username) FROM `users` AS u WHERE u.gid = `backups`.started_by), '') END;--> statement-breakpoint
UPDATE `projects` SET `next_backup_version` = 1 + coalesce((SELECT max(version) FROM `backups` WHERE project_gid = `projects`.gid), 0);--> statement-breakpoint
CREATE UNIQUE INDEX `backups_project_version` ON `backups` (`project_gid`,`version`);--> statement-breakpoint
-- The job names of the reference.
UPDATE `jobs` SET `kind` = 'backup_project' WHERE `kind` = 'backups.create';--> statement-breakpoint
UPDATE `jobs` SET `kind` = 'restore_project' WHERE `kind` = 'backups.restore';--> statement-breakpoint
-- Projects made before the settings existed start with what a new project starts with: the owner's
-- time zone, English, the `__all__` channel and a main channel, ordering and fieldlist (keys are
-- fresh 20-character gids; the ordered lists are filled in when the options are read).
UPDATE `projects` SET `options` = json_set(`options`, '$.timezone', coalesce((SELECT u.timezone FROM `users` AS u WHERE u.gid = `projects`.owner), 'UTC'))
  WHERE json_type(`options`, '$.timezone') IS NULL;--> statement-breakpoint
UPDATE `projects` SET `options` = json_set(`options`, '$.languages', json_array('en')) WHERE json_type(`options`, '$.languages') IS NULL;--> statement-breakpoint
UPDATE `projects` SET `options` = json_set(`options`, '$.channels', json_object('__all__', '[all records]', lower(hex(randomblob(10))), 'Main channel'))
  WHERE json_type(`options`, '$.channels') IS NULL;--> statement-breakpoint
UPDATE `projects` SET `options` = json_set(`options`, '$.orderings', json_object(lower(hex(randomblob(10))), 'Main ordering'))
  WHERE json_type(`options`, '$.orderings') IS NULL;--> statement-breakpoint
UPDATE `projects` SET `options` = json_set(`options`, '$.fieldlists', json_object(lower(hex(randomblob(10))), 'Main fieldlist'))
  WHERE json_type(`options`, '$.fieldlists') IS NULL;

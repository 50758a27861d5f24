CREATE TABLE `dam_transforms` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_gid` text NOT NULL,
	`file` text NOT NULL,
	`asset_gid` text NOT NULL,
	`source` text NOT NULL,
	`width` integer NOT NULL,
	`height` integer NOT NULL,
	`size` integer NOT NULL,
	`options` text NOT NULL,
	`updated_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dam_transforms_file` ON `dam_transforms` (`project_gid`,`file`);--> statement-breakpoint
CREATE INDEX `dam_transforms_asset` ON `dam_transforms` (`asset_gid`);
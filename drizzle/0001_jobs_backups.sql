CREATE TABLE `jobs` (
	`token` text PRIMARY KEY NOT NULL,
	`project_gid` text,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`info` text DEFAULT '{}' NOT NULL,
	`params` text DEFAULT '{}' NOT NULL,
	`user_gid` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	`started_on` real,
	`finished_on` real
);
--> statement-breakpoint
CREATE INDEX `jobs_status_created` ON `jobs` (`status`,`created_on`);--> statement-breakpoint
CREATE INDEX `jobs_project` ON `jobs` (`project_gid`);--> statement-breakpoint
CREATE TABLE `backups` (
	`gid` text PRIMARY KEY NOT NULL,
	`project_gid` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`notes` text DEFAULT '' NOT NULL,
	`status` text NOT NULL,
	`job_token` text,
	`created_by` text,
	`scheduled` integer DEFAULT false NOT NULL,
	`cursor` integer,
	`rows` integer DEFAULT 0 NOT NULL,
	`files` integer DEFAULT 0 NOT NULL,
	`size` integer DEFAULT 0 NOT NULL,
	`error` text,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	`completed_on` real
);
--> statement-breakpoint
CREATE INDEX `backups_project` ON `backups` (`project_gid`,`created_on`);--> statement-breakpoint
CREATE TABLE `asset_versions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_gid` text NOT NULL,
	`asset_gid` text NOT NULL,
	`version` integer NOT NULL,
	`storage_name` text NOT NULL,
	`name` text NOT NULL,
	`extension` text NOT NULL,
	`mime` text NOT NULL,
	`size` integer NOT NULL,
	`sha256` text,
	`width` integer,
	`height` integer,
	`format` text,
	`pages` integer,
	`extracted` text DEFAULT '{}' NOT NULL,
	`created_on` real NOT NULL,
	`created_by` text,
	`replaced_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`gid`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `asset_versions_asset_version` ON `asset_versions` (`asset_gid`,`version`);--> statement-breakpoint
CREATE UNIQUE INDEX `asset_versions_storage_name` ON `asset_versions` (`storage_name`);--> statement-breakpoint
CREATE INDEX `asset_versions_project` ON `asset_versions` (`project_gid`);--> statement-breakpoint
CREATE TABLE `assets` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`gid` text NOT NULL,
	`project_gid` text NOT NULL,
	`parent` text,
	`type` text NOT NULL,
	`name` text NOT NULL,
	`extension` text DEFAULT '' NOT NULL,
	`mime` text DEFAULT '' NOT NULL,
	`size` integer DEFAULT 0 NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`storage_name` text,
	`sha256` text,
	`width` integer,
	`height` integer,
	`format` text,
	`pages` integer,
	`extracted` text DEFAULT '{}' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`deleted_with` text,
	`deleted_on` real,
	`published` integer DEFAULT false NOT NULL,
	`public_name` text,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	`created_by` text,
	`updated_by` text,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`gid`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`updated_by`) REFERENCES `users`(`gid`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `assets_gid` ON `assets` (`gid`);--> statement-breakpoint
CREATE UNIQUE INDEX `assets_storage_name` ON `assets` (`storage_name`);--> statement-breakpoint
CREATE INDEX `assets_project_parent` ON `assets` (`project_gid`,`parent`,`name`);--> statement-breakpoint
CREATE INDEX `assets_project_status` ON `assets` (`project_gid`,`status`);--> statement-breakpoint
CREATE INDEX `assets_deleted_with` ON `assets` (`deleted_with`);
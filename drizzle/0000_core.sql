CREATE TABLE `change_audience` (
	`user_gid` text NOT NULL,
	`cursor` integer NOT NULL,
	PRIMARY KEY(`user_gid`, `cursor`),
	FOREIGN KEY (`cursor`) REFERENCES `changes`(`cursor`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `change_audience_cursor` ON `change_audience` (`cursor`);--> statement-breakpoint
CREATE TABLE `changes` (
	`cursor` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`type` text NOT NULL,
	`action` text NOT NULL,
	`data_type` text NOT NULL,
	`data_key` text NOT NULL,
	`data` text,
	`created_on` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `changes_type_cursor` ON `changes` (`type`,`cursor`);--> statement-breakpoint
CREATE TABLE `memberships` (
	`project_gid` text NOT NULL,
	`user_gid` text NOT NULL,
	`status` text NOT NULL,
	`roles` text NOT NULL,
	`options` text DEFAULT '{}' NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	PRIMARY KEY(`project_gid`, `user_gid`),
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_gid`) REFERENCES `users`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `memberships_user` ON `memberships` (`user_gid`);--> statement-breakpoint
CREATE TABLE `meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `projects` (
	`gid` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`icon` text DEFAULT '' NOT NULL,
	`owner` text NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`options` text DEFAULT '{}' NOT NULL,
	`last_backed_up` real,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	`deleted_on` real,
	FOREIGN KEY (`owner`) REFERENCES `users`(`gid`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `users` (
	`gid` text PRIMARY KEY NOT NULL,
	`kind` text DEFAULT 'person' NOT NULL,
	`username` text,
	`email` text DEFAULT '' NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`password_hash` text,
	`avatar` text,
	`status` text DEFAULT 'active' NOT NULL,
	`language` text DEFAULT 'en' NOT NULL,
	`timezone` text DEFAULT 'UTC' NOT NULL,
	`token_version` integer DEFAULT 0 NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_username_nocase` ON `users` (lower("username"));--> statement-breakpoint
CREATE INDEX `users_email` ON `users` (`email`);
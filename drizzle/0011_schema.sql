CREATE TABLE `classes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`gid` text NOT NULL,
	`project_gid` text NOT NULL,
	`original` text,
	`is_new` integer DEFAULT false NOT NULL,
	`name` text NOT NULL,
	`label` text DEFAULT '{}' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`spec` text DEFAULT '{}' NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `classes_gid` ON `classes` (`gid`);--> statement-breakpoint
CREATE INDEX `classes_project_name` ON `classes` (`project_gid`,`name`);--> statement-breakpoint
CREATE INDEX `classes_original` ON `classes` (`original`);--> statement-breakpoint
CREATE TABLE `definitions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`gid` text NOT NULL,
	`project_gid` text NOT NULL,
	`original` text,
	`is_new` integer DEFAULT false NOT NULL,
	`name` text NOT NULL,
	`label` text DEFAULT '{}' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`spec` text DEFAULT '{}' NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `definitions_gid` ON `definitions` (`gid`);--> statement-breakpoint
CREATE INDEX `definitions_project_name` ON `definitions` (`project_gid`,`name`);--> statement-breakpoint
CREATE INDEX `definitions_original` ON `definitions` (`original`);--> statement-breakpoint
CREATE TABLE `fields` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`gid` text NOT NULL,
	`project_gid` text NOT NULL,
	`original` text,
	`is_new` integer DEFAULT false NOT NULL,
	`name` text NOT NULL,
	`label` text DEFAULT '{}' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`spec` text DEFAULT '{}' NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `fields_gid` ON `fields` (`gid`);--> statement-breakpoint
CREATE INDEX `fields_project_name` ON `fields` (`project_gid`,`name`);--> statement-breakpoint
CREATE INDEX `fields_original` ON `fields` (`original`);--> statement-breakpoint
CREATE TABLE `layouts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`gid` text NOT NULL,
	`project_gid` text NOT NULL,
	`original` text,
	`is_new` integer DEFAULT false NOT NULL,
	`name` text NOT NULL,
	`label` text DEFAULT '{}' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`spec` text DEFAULT '{}' NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `layouts_gid` ON `layouts` (`gid`);--> statement-breakpoint
CREATE INDEX `layouts_project_name` ON `layouts` (`project_gid`,`name`);--> statement-breakpoint
CREATE INDEX `layouts_original` ON `layouts` (`original`);
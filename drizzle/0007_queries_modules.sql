CREATE TABLE `queries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`gid` text NOT NULL,
	`project_gid` text NOT NULL,
	`type` text NOT NULL,
	`name` text NOT NULL,
	`q` text DEFAULT '' NOT NULL,
	`filter` text DEFAULT '[]' NOT NULL,
	`created_by` text,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `queries_gid` ON `queries` (`gid`);--> statement-breakpoint
CREATE UNIQUE INDEX `queries_project_type_name` ON `queries` (`project_gid`,`type`,`name`);--> statement-breakpoint
CREATE TABLE `modules` (
	`project_gid` text NOT NULL,
	`name` text NOT NULL,
	`version` text NOT NULL,
	`keys` text DEFAULT '{}' NOT NULL,
	`actions` text DEFAULT '{}' NOT NULL,
	`logs` text DEFAULT '[]' NOT NULL,
	`api_user` text,
	`registered_by` text NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	PRIMARY KEY(`project_gid`, `name`),
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);

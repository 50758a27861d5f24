CREATE TABLE `apikeys` (
	`user_gid` text PRIMARY KEY NOT NULL,
	`project_gid` text NOT NULL,
	`key_hash` text NOT NULL,
	`key_prefix` text NOT NULL,
	`created_on` real NOT NULL,
	`updated_on` real NOT NULL,
	`last_used_on` real,
	FOREIGN KEY (`user_gid`) REFERENCES `users`(`gid`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_gid`) REFERENCES `projects`(`gid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `apikeys_key_hash` ON `apikeys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `apikeys_project` ON `apikeys` (`project_gid`);
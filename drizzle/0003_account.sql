CREATE TABLE `verification_codes` (
	`validation_hash` text PRIMARY KEY NOT NULL,
	`code_hash` text NOT NULL,
	`purpose` text NOT NULL,
	`email` text NOT NULL,
	`username` text,
	`password_hash` text,
	`user_gid` text,
	`user_gids` text DEFAULT '[]' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`expires_on` real NOT NULL,
	`created_on` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `verification_codes_expires` ON `verification_codes` (`expires_on`);--> statement-breakpoint
CREATE INDEX `verification_codes_user` ON `verification_codes` (`user_gid`);
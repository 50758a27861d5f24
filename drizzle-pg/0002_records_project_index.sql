-- bulk/get's pages by id, with status and tree level: counting every live record of a project reads
-- this index alone instead of the wide rows.
DROP INDEX "records_project";--> statement-breakpoint
CREATE INDEX "records_project" ON "records" USING btree ("project_gid","id","status","treelevel");
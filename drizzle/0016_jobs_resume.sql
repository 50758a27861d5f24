-- Where an interrupted job goes on from: what its handler saved with its last unit of work
-- (src/platform/jobs/runner.ts, progress.save); null until it saves something.
ALTER TABLE `jobs` ADD `resume` text;

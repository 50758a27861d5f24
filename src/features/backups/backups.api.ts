/**
 * The front door of the backups feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/backups/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { listProjectBackups } from "./backups.service";

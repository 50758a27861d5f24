/**
 * The front door of the instance feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/instance/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { announceVersion } from "./instance.service";

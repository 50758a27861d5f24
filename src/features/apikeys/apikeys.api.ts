/**
 * The front door of the apikeys feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/apikeys/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { userOfKey } from "./apikeys.service";

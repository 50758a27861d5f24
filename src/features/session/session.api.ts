/**
 * The front door of the session feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/session/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { globalInit, sessionOf, tokenHolder } from "./session.service";
export type { Session } from "./session.service";

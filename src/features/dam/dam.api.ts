/**
 * The front door of the dam feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/dam/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { isMediaFileName } from "./dam.options";
export { publishedOriginal, transformNoted } from "./dam.service";

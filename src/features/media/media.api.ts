/**
 * The front door of the media feature: what other features may use of it (answering a stored
 * object with the media contract: ETag, 304, Range). Everything else in src/features/media/ is
 * its own; test/architecture.test.ts keeps other code from importing past this file.
 */
export { serveBlob, type ServeOptions } from "./media.files";
export { MEDIA_PATHS } from "./media.paths";

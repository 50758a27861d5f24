import type { Feature } from "../feature";
import { settingsOperations } from "./settings.routes";

/** Project settings: languages, channels, orderings and fieldlists of a project (docs/settings.md). */
export const settingsFeature: Feature = { name: "settings", operations: settingsOperations };

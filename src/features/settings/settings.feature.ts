import type { Feature } from "../feature";

/**
 * Project settings: for now the normalized options every feature reads (settings.options.ts); the
 * languages/channels/orderings/fieldlists endpoints join this descriptor (docs/settings.md).
 */
export const settingsFeature: Feature = { name: "settings" };

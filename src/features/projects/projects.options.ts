/**
 * The project's settings as stored in `projects.options` (JSON), normalized: what a project made
 * before any setting was touched has the defaults below. The languages/channels/orderings/
 * fieldlists endpoints write these members; the schema and records read them through here.
 * They are a column of the project's row, so they live with the projects feature (the settings
 * feature, above it, edits them; a new project starts with `newProjectOptions`).
 */

export type ProjectOptions = {
  timezone: string;
  /** Project languages, in order; the first is the default language. */
  languages: string[];
  channels: Record<string, string>;
  orderedchannels: string[];
  orderings: Record<string, string>;
  orderedorderings: string[];
  fieldlists: Record<string, string>;
  orderedfieldlists: string[];
  imageserver: { type: string; options: Record<string, unknown> };
};

/** The channel every record is in; it cannot be removed. */
export const ALL_CHANNEL = "__all__";

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** A string-to-string map from stored JSON, keeping own string entries only. */
function names(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isObject(v)) return out;
  for (const [k, name] of Object.entries(v)) if (typeof name === "string") out[k] = name;
  return out;
}

/** An order list that names every key of `dict` once: stored order first, unknown keys dropped, missing keys appended. */
function ordered(v: unknown, dict: Record<string, string>): string[] {
  const keys = new Set(Object.keys(dict));
  const out: string[] = [];
  if (Array.isArray(v)) for (const k of v) if (typeof k === "string" && keys.has(k) && !out.includes(k)) out.push(k);
  for (const k of keys) if (!out.includes(k)) out.push(k);
  return out;
}

/** The normalized options of a project row (or of its `options` value). */
export function projectOptions(
  project: { options?: Record<string, unknown> | null } | null | undefined,
): ProjectOptions {
  const o = isObject(project?.options) ? project!.options! : {};
  const languages = Array.isArray(o.languages)
    ? [...new Set(o.languages.filter((l): l is string => typeof l === "string" && l.length > 0))]
    : [];
  const channels = { [ALL_CHANNEL]: "[all records]", ...names(o.channels) };
  const orderings = names(o.orderings);
  const fieldlists = names(o.fieldlists);
  const imageserver =
    isObject(o.imageserver) && typeof o.imageserver.type === "string"
      ? { type: o.imageserver.type, options: isObject(o.imageserver.options) ? o.imageserver.options : {} }
      : { type: "ccdam", options: {} };
  return {
    timezone: typeof o.timezone === "string" && o.timezone ? o.timezone : "UTC",
    languages: languages.length ? languages : ["en"],
    channels,
    // `__all__` always comes first: nothing can be moved before it.
    orderedchannels: [ALL_CHANNEL, ...ordered(o.orderedchannels, channels).filter((k) => k !== ALL_CHANNEL)],
    orderings,
    orderedorderings: ordered(o.orderedorderings, orderings),
    fieldlists,
    orderedfieldlists: ordered(o.orderedfieldlists, fieldlists),
    imageserver,
  };
}

/** The main channel, ordering and fieldlist names a new project starts with (as the reference's). */
const DEFAULT_NAMES = {
  channel: "Main channel",
  ordering: "Main ordering",
  fieldlist: "Main fieldlist",
} as const;

/**
 * The stored options of a new project: the given time zone, English, the `__all__` channel plus a
 * main channel, one main ordering and one main fieldlist (keys from `newKey`), the image server.
 */
export function newProjectOptions(timezone: string, newKey: () => string): ProjectOptions {
  const channel = newKey();
  const ordering = newKey();
  const fieldlist = newKey();
  return {
    timezone,
    languages: ["en"],
    channels: { [ALL_CHANNEL]: "[all records]", [channel]: DEFAULT_NAMES.channel },
    orderedchannels: [ALL_CHANNEL, channel],
    orderings: { [ordering]: DEFAULT_NAMES.ordering },
    orderedorderings: [ordering],
    fieldlists: { [fieldlist]: DEFAULT_NAMES.fieldlist },
    orderedfieldlists: [fieldlist],
    imageserver: { type: "ccdam", options: {} },
  };
}

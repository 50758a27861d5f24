// The console's one door to the server: every /api, /sync, /dam and /media address and every
// answer shape is known in this folder and nowhere else. Answers are turned into the small view types of views.ts,
// so when a shape on the wire changes (docs/*.md; the reference-compat work), this file changes and
// the pages do not.
//
// Assets and the DAM speak the reference's shapes (docs/assets.md, docs/dam.md): the asset form
// (pathname, path, is_file, `type` = extension, status "published"/"deleted", info, metadata
// fields {type, is_localized, value}), a root folder `/` per project, children/search with
// page.top, uploads in `upload_file`, one dotted metadata field per metadata/set, autocomplete
// completions, dam/info's reference members (versions and publication come from dam/details).
//
// Projects, backups, API keys, members, the account and the project settings speak the current
// shapes too (docs/api.md, backups.md, apikeys.md, members.md, account.md, settings.md): the full
// project form (options, backups {versions, next_version}, build), backups known by their integer
// version (the list with details from the backups/get extension; no `backups` sync items, a
// `cc.projects` UPDATE instead), jobs/get's result.job, apikeys/create's `apikey` and the listing's
// result["apikeys.info"], members/get's result.users, reset_password_request's username_or_email,
// account/update's top-level members, and the settings endpoints (languages, channels, orderings,
// fieldlists).

//
// One module per role: http (token, errors, call, upload), views (view types, wire → view),
// account, projects (members, API keys, backups, settings, jobs), assets (and the DAM, thumbnails),
// sync, schema, records, queries. Pages import from "../api" (this file).
export * from "./http";
export * from "./views";
export * from "./account";
export * from "./projects";
export * from "./assets";
export * from "./sync";
export * from "./schema";
export * from "./records";
export * from "./queries";

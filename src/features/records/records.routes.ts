import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import type { Ctx } from "../../platform/context";
import * as CH from "./channels.service";
import * as DEF from "./definition.service";
import { previewField } from "./preview.service";
import { bulkGet, startRecordsBulk } from "./records.bulk";
import { searchRecords } from "./records.search";
import * as S from "./records.service";
import { getWorksheet } from "./records.worksheet";
import * as T from "./tree.service";

// The route template of src/features/apikeys/apikeys.routes.ts: schemas at the top, then one chain
// where every endpoint is its path, one service call wrapped by `answer`, and its options. The
// records services check every member themselves (a wrong type is a 400 naming the member, as the
// reference answers), so the members are `loose` here.

const tag = (area: string) => [`records: ${area}`];
const params = t.Object({ project: t.String() });
const loose = t.Optional(t.Unknown());
const langs = { language: loose, languages: loose };
const page = { "page.top": loose, "page.size": loose };
const place = t.Object({ ...langs, record: loose, parent: loose, ordering: loose, before_record: loose });
const recordOnly = t.Object({ ...langs, record: loose });
const str = t.Optional(t.String());
const fieldlistBody = t.Object({ ...langs, record: loose, fieldlist: str, field: str, before_field: str });
const component = t.Object({ ...langs, record: loose, component: str, parent: str, type: str, name: t.Optional(t.Nullable(t.String())), options: t.Optional(t.Record(t.String(), t.Unknown())), before_component: str });
const bulkBody = t.Object({ ...langs, selection: loose, parent: loose, ordering: loose, before_record: loose, channels: loose, enabled: loose, definition: loose, fields: loose });

/**
 * The records endpoints under `/api/p/<project>/records/` (docs/records.md). Any active member of
 * the project (owner, member, API user) may call every one.
 */
export function recordsRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/records" })
    .use(authMacro(ctx))
    .post("/root", ({ params, body, actor }) => answer(S.getRoot(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs }),
      detail: { summary: "The project's root record (made on first use)", tags: tag("tree") },
    })
    .post("/get", ({ params, body, actor }) => answer(S.getRecords(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, records: loose }),
      detail: { summary: "One record (`record` → result.record) or several (`records` → result.records)", tags: tag("tree") },
    })
    .post("/children", ({ params, body, actor }) => answer(S.getChildren(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, channel: loose, ordering: loose, ...page }),
      detail: { summary: "One page of a record's children, by channel and ordering (`children`, `children.size`)", tags: tag("tree") },
    })
    .post("/tree", ({ params, body, actor }) => answer(T.getTree(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, expanded_records: loose, ordering: loose, ...page }),
      detail: { summary: "The expanded part of the tree as a flat, paged list (records without fields)", tags: tag("tree") },
    })
    .post("/create", ({ params, body, actor }) => answer(S.createRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, parent: loose, ordering: loose }),
      detail: { summary: "A new last child of `parent` (definition as the parent's children have)", tags: tag("tree") },
    })
    .post("/update", ({ params, body, actor }) => answer(S.updateRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, fields: loose }),
      detail: { summary: "Values per language; invalid fields refused, valid ones stored; answers report.validation", tags: tag("values") },
    })
    .post("/move", ({ params, body, actor }) => answer(T.moveRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: place,
      detail: { summary: "Move a record with its subtree (sparse ordering keys: one place row written)", tags: tag("tree") },
    })
    .post("/orderings/set", ({ params, body, actor }) => answer(T.setOrderings(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, orderings: loose }),
      detail: { summary: "Raw positions of a record in some orderings", tags: tag("tree") },
    })
    .post("/copy", ({ params, body, actor }) => answer(T.copyRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: place,
      detail: { summary: "Copy a record with its live subtree (a job beyond 2,000 records)", tags: tag("copies and links") },
    })
    .post("/shallow_copy", ({ params, body, actor }) => answer(T.shallowCopy(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: place,
      detail: { summary: "Copy a record without its subtree", tags: tag("copies and links") },
    })
    .post("/duplicate", ({ params, body, actor }) => answer(T.duplicateRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, ordering: loose }),
      detail: { summary: "Copy a record right after itself", tags: tag("copies and links") },
    })
    .post("/link", ({ params, body, actor }) => answer(T.linkRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: place,
      detail: { summary: "A linked copy kept in step with its canonical record", tags: tag("copies and links") },
    })
    .post("/unlink", ({ params, body, actor }) => answer(T.unlinkRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: recordOnly,
      detail: { summary: "Make a linked copy a record of its own", tags: tag("copies and links") },
    })
    .post("/delete", ({ params, body, actor }) => answer(T.deleteRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: recordOnly,
      detail: { summary: "Delete a record with its subtree and links (undeletable)", tags: tag("tree") },
    })
    .post("/undelete", ({ params, body, actor }) => answer(T.undeleteRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: recordOnly,
      detail: { summary: "Restore a deleted record with its subtree and links", tags: tag("tree") },
    })
    .post("/permanent_delete", ({ params, body, actor }) => answer(T.permanentDeleteRecord(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: recordOnly,
      detail: { summary: "Remove a deleted record for good, with its subtree and links (a job; asset files untouched)", tags: tag("tree") },
    })
    .post("/search", ({ params, body, actor }) => answer(searchRecords(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, q: loose, filter: loose, ...page }),
      detail: { summary: "Search records: full text `q` (+/- terms) and/or `filter`, best match first", tags: tag("search and bulk") },
    })
    .post("/worksheet", ({ params, body, actor }) => answer(getWorksheet(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, ordering: loose, ...page }),
      detail: { summary: "A parent's grid: path, one page of children, sibling_definitions", tags: tag("tree") },
    })
    .post("/fields/preview", async ({ params, body, actor }) => answer(await previewField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, field: loose, value: loose }),
      detail: { summary: "A preview image of a barcode field's value (EAN-13, UPC-A, EAN-8, GTIN-14)", tags: tag("values") },
    })
    .post("/channels/set", ({ params, body, actor }) => answer(CH.setChannels(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, channels: loose, enabled: loose }),
      detail: { summary: "Switch channels on or off for a record", tags: tag("channels") },
    })
    .post("/channels/copy_from_parent", ({ params, body, actor }) => answer(CH.copyChannelsFromParent(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, channels: loose }),
      detail: { summary: "Copy the parent's state of the channels to the record", tags: tag("channels") },
    })
    .post("/channels/copy_down", ({ params, body, actor }) => answer(CH.copyChannelsDown(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, channels: loose }),
      detail: { summary: "Copy the record's state of the channels to its whole subtree (a job)", tags: tag("channels") },
    })
    .post("/channels/copy_up", ({ params, body, actor }) => answer(CH.copyChannelsUp(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, channels: loose }),
      detail: { summary: "Switch the record's enabled channels on for its ancestors", tags: tag("channels") },
    })
    .post("/definition/set", ({ params, body, actor }) => answer(DEF.setRecordDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, definition: loose }),
      detail: { summary: "Give the record another definition (values of shared fields kept, the rest cleared)", tags: tag("definition") },
    })
    .post("/definition/revert", ({ params, body, actor }) => answer(DEF.revertRecordDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: recordOnly,
      detail: { summary: "Give the record back the definition its extended definition extends", tags: tag("definition") },
    })
    .post("/definition/copy_to_siblings", ({ params, body, actor }) => answer(DEF.copyDefinitionToSiblings(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: recordOnly,
      detail: { summary: "Give the record's definition to all its siblings", tags: tag("definition") },
    })
    .post("/definition/classes/add", ({ params, body, actor }) => answer(DEF.addClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, class: str, before_class: str }),
      detail: { summary: "Add a class to the record's extended definition (made on first change)", tags: tag("definition") },
    })
    .post("/definition/classes/remove", ({ params, body, actor }) => answer(DEF.removeClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, class: str }),
      detail: { summary: "Remove an added class from the record's extended definition", tags: tag("definition") },
    })
    .post("/definition/fields/add", ({ params, body, actor }) => answer(DEF.addField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, field: str, before_field: str }),
      detail: { summary: "Add a field to the record's extended definition (made on first change)", tags: tag("definition") },
    })
    .post("/definition/fields/remove", ({ params, body, actor }) => answer(DEF.removeField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, field: str }),
      detail: { summary: "Remove an added field from the record's extended definition", tags: tag("definition") },
    })
    .post("/definition/fieldlists/fields/add", ({ params, body, actor }) => answer(DEF.addFieldlistField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: fieldlistBody,
      detail: { summary: "Add a field to a fieldlist of the record's extended definition", tags: tag("definition") },
    })
    .post("/definition/fieldlists/fields/move", ({ params, body, actor }) => answer(DEF.moveFieldlistField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: fieldlistBody,
      detail: { summary: "Move a field in a fieldlist of the record's extended definition", tags: tag("definition") },
    })
    .post("/definition/fieldlists/fields/remove", ({ params, body, actor }) => answer(DEF.removeFieldlistField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: fieldlistBody,
      detail: { summary: "Remove a field from a fieldlist of the record's extended definition", tags: tag("definition") },
    })
    .post("/definition/layouts/modify", ({ params, body, actor }) => answer(DEF.modifyLayout(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, record: loose, name: str, root: str, components: t.Optional(t.Record(t.String(), t.Unknown())) }),
      detail: { summary: "Modify the layout of the record's extended definition", tags: tag("definition") },
    })
    .post("/definition/layouts/components/create", ({ params, body, actor }) => answer(DEF.createComponent(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: component,
      detail: { summary: "Add a component to the extended definition's layout", tags: tag("definition") },
    })
    .post("/definition/layouts/components/modify", ({ params, body, actor }) => answer(DEF.modifyComponent(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: component,
      detail: { summary: "Modify a component of the extended definition's layout", tags: tag("definition") },
    })
    .post("/definition/layouts/components/move", ({ params, body, actor }) => answer(DEF.moveComponent(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: component,
      detail: { summary: "Move a component of the extended definition's layout into `parent`", tags: tag("definition") },
    })
    .post("/definition/layouts/components/delete", ({ params, body, actor }) => answer(DEF.deleteComponent(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: component,
      detail: { summary: "Delete a component (with its content) of the extended definition's layout", tags: tag("definition") },
    })
    .post("/bulk/get", ({ params, body, actor }) => answer(bulkGet(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...langs, selection: loose, "page.size": loose, "page.cursor": loose }),
      detail: { summary: "One page of a selection (opaque page.cursor, stable under concurrent writes)", tags: tag("search and bulk") },
    })
    .post("/bulk/delete", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "delete", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Delete every selected record (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/undelete", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "undelete", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Undelete every selected record (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/permanent_delete", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "permanent_delete", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Remove every selected deleted record for good (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/duplicate", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "duplicate", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Duplicate every selected record (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/shallow_copy", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "shallow_copy", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Copy every selected record under `parent` (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/link", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "link", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Link every selected record under `parent` (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/move", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "move", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Move every selected record under `parent` (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/channels/set", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "channels/set", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Switch channels on or off for every selected record (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/definition/set", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "definition/set", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Give every selected record a definition (a job): answers job.token", tags: tag("search and bulk") },
    })
    .post("/bulk/update", ({ params, body, actor }) => answer(startRecordsBulk(ctx, actor, params.project, "update", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Write the same values to every selected record (a job): answers job.token", tags: tag("search and bulk") },
    });
}

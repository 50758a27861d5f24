import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { receiveMultipart } from "../../http/multipart";
import { describe } from "../../http/openapi";
import { operation } from "../../http/operations";
import type { Ctx, ProjectOperation } from "../../platform/context";
import * as channelService from "./channels.service";
import { getCompleteness } from "./completeness.service";
import * as definitionService from "./definition.service";
import { excelDownload, XLSX_TYPE } from "./excel.service";
import { serveBlob, type ServeOptions } from "../media/media.api";
import { exportChildren } from "./export.service";
import { importChildren } from "./import.service";
import { previewField } from "./preview.service";
import { bulkGet, startRecordsBulk } from "./records.bulk";
import { searchRecords } from "./records.search";
import * as recordService from "./records.service";
import { getWorksheet } from "./records.worksheet";
import * as treeService from "./tree.service";

// The route template of src/features/apikeys/apikeys.routes.ts: schemas at the top, then one list
// where every endpoint is an operation (its path, body schema, one service call, summary and tags;
// served as POST /api/p/<project>/<path> and runnable in a batch). A body's schema is checked
// before its service, so a member is typed only where the service checks it first (or right after
// members typed before it) and answers its wrong type as the schema does ("Invalid parameter" with
// the same `expected`); the service's input type is then the schema's. A member stays `loose` (the
// service checks it, with the same answers as before) when typing it would change an answer:
// - it is checked after a domain check the schema cannot make (the project's languages, that a
//   record, parent or ordering exists): typed, a body with both faults would be answered by it;
// - the service names its wrong type as missing ("Missing parameter": `need` of
//   definition.service.ts, the bulk operations' checks);
// - its 400 carries other info (search paging: FilterError's `path` and `reason`).

const tag = (area: string) => [`records: ${area}`];
const params = t.Object({ project: t.String() });
const loose = t.Optional(t.Unknown());
/** How a written Excel download is answered (never cached: the link is the permission). */
const DOWNLOAD_SERVE: ServeOptions = { contentType: XLSX_TYPE, cacheControl: "no-store" };
/**
 * `language` and `languages` typed, for the services that read them first (`languagesOf`): the
 * schema's 400 is theirs (null is absent; the project's languages stay the service's check).
 */
const langs = {
  language: t.Optional(t.Union([t.String(), t.Null()], { description: "a language code" })),
  languages: t.Optional(t.Union([t.Array(t.String()), t.Null()], { description: "an array of language codes" })),
};
/** Loose where the service checks the languages after other members (typed, they would be refused first). */
const looseLangs = { language: loose, languages: loose };
// Checked after the record or the languages (search: FilterError's info, not `expected`).
const page = { "page.top": loose, "page.size": loose };
/**
 * The record an operation works on, for the services that check it first (`mustRecord`): required
 * (absent, null or "" is the missing member) and text, as they answer; that it exists stays theirs.
 */
const recordGid = t.String({ description: "a record gid" });
const place = t.Object({ ...looseLangs, record: recordGid, parent: loose, ordering: loose, before_record: loose });
const recordOnly = t.Object({ ...looseLangs, record: recordGid });
const str = t.Optional(t.String());
// `record` loose in the extension operations: `need` answers a non-text record as missing, after the typed members.
const fieldlistBody = t.Object({ ...looseLangs, record: loose, fieldlist: str, field: str, before_field: str });
const component = t.Object({
  ...looseLangs,
  record: loose, // required and typed, it would be named before the typed members the schema checks today
  component: str,
  parent: str,
  type: str,
  name: t.Optional(t.Nullable(t.String())),
  options: t.Optional(t.Record(t.String(), t.Unknown())),
  before_component: str,
});
// Loose: each bulk operation's check names a wrong `channels`, `enabled`, `definition` or `fields`
// as missing, and the selection is resolved after it (resolveSelection's own answers).
const bulkBody = t.Object({
  ...looseLangs,
  selection: loose,
  parent: loose,
  ordering: loose,
  before_record: loose,
  channels: loose,
  enabled: loose,
  definition: loose,
  fields: loose,
});

/** The operations whose typed members their services alone checked before (see recordsOperations). */
const RUN_CHECKED = new Set(
  [
    "root",
    "get",
    "children",
    "tree",
    "create",
    "update",
    "worksheet",
    "bulk/get",
    "move",
    "copy",
    "shallow_copy",
    "link",
    "unlink",
    "delete",
    "undelete",
    "permanent_delete",
    "orderings/set",
    "duplicate",
    "channels/set",
    "channels/copy_from_parent",
    "channels/copy_down",
    "channels/copy_up",
    "definition/set",
    "definition/revert",
    "definition/copy_to_siblings",
  ].map((p) => `records/${p}`),
);

/**
 * The records endpoints under `/api/p/<project>/records/` (docs/records.md). Any active member of
 * the project (owner, member, API user) may call every one. All but the barcode preview (which
 * draws an image, asynchronously) are operations. In a batch their bodies are refused when the
 * step runs (`bodyErrorsWhenRun`), as when the services alone checked them: those given typed
 * members here (RUN_CHECKED; the others' schemas refused before the batch started already).
 */
export const recordsOperations: ProjectOperation[] = [
  operation(
    "records/root",
    t.Object({ ...langs }),
    recordService.getRoot,
    {
      summary: "The project's root record (made on first use)",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/get",
    t.Object({ ...langs, record: loose, records: loose }),
    recordService.getRecords,
    {
      summary: "One record (`record` → result.record) or several (`records` → result.records)",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/completeness",
    t.Object({
      language: t.Optional(t.String()),
      languages: t.Optional(t.Array(t.String())),
      record: t.Optional(t.String()),
      records: t.Optional(t.Array(t.String())),
      parent: t.Optional(t.String()),
      channel: t.Optional(t.String()),
    }),
    getCompleteness,
    {
      summary: "Extension: required fields filled per record and language (a record, records or a parent's children)",
      tags: tag("tree"),
    },
  ),
  operation(
    "records/children",
    t.Object({ ...langs, record: loose, channel: loose, ordering: loose, ...page }),
    recordService.getChildren,
    {
      summary: "One page of a record's children, by channel and ordering (`children`, `children.size`)",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/tree",
    t.Object({ ...langs, expanded_records: loose, ordering: loose, ...page }),
    treeService.getTree,
    {
      summary: "The expanded part of the tree as a flat, paged list (records without fields)",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/create",
    t.Object({ ...langs, parent: loose, ordering: loose }),
    recordService.createRecord,
    {
      summary: "A new last child of `parent` (definition as the parent's children have)",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/update",
    t.Object({ ...langs, record: loose, fields: loose }),
    recordService.updateRecord,
    {
      summary: "Values per language; invalid fields refused, valid ones stored; answers report.validation",
      tags: tag("values"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/move",
    place,
    treeService.moveRecord,
    {
      summary: "Move a record with its subtree (sparse ordering keys: one place row written)",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/orderings/set",
    t.Object({ ...looseLangs, record: recordGid, orderings: loose }),
    treeService.setOrderings,
    {
      summary: "Raw positions of a record in some orderings",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/copy",
    place,
    treeService.copyRecord,
    {
      summary: "Copy a record with its live subtree (a job beyond 2,000 records)",
      tags: tag("copies and links"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/shallow_copy",
    place,
    treeService.shallowCopy,
    {
      summary: "Copy a record without its subtree",
      tags: tag("copies and links"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/duplicate",
    t.Object({ ...looseLangs, record: recordGid, ordering: loose }),
    treeService.duplicateRecord,
    {
      summary: "Copy a record right after itself",
      tags: tag("copies and links"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/link",
    place,
    treeService.linkRecord,
    {
      summary: "A linked copy kept in step with its canonical record",
      tags: tag("copies and links"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/unlink",
    recordOnly,
    treeService.unlinkRecord,
    {
      summary: "Make a linked copy a record of its own",
      tags: tag("copies and links"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/delete",
    recordOnly,
    treeService.deleteRecord,
    {
      summary: "Delete a record with its subtree and links (undeletable)",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/undelete",
    recordOnly,
    treeService.undeleteRecord,
    {
      summary: "Restore a deleted record with its subtree and links",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation("records/permanent_delete", recordOnly, treeService.permanentDeleteRecord, {
    summary: "Remove a deleted record for good, with its subtree and links (a job; asset files untouched)",
    tags: tag("tree"),
  }),
  operation(
    "records/search",
    t.Object({ ...looseLangs, q: loose, filter: loose, ...page }),
    searchRecords,
    {
      summary: "Search records: full text `q` (+/- terms) and/or `filter`, best match first",
      tags: tag("search and bulk"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/worksheet",
    t.Object({ ...langs, record: loose, ordering: loose, ...page }),
    getWorksheet,
    {
      summary: "A parent's grid: path, one page of children, sibling_definitions",
      tags: tag("tree"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/channels/set",
    t.Object({ ...looseLangs, record: recordGid, channels: loose, enabled: loose }),
    channelService.setChannels,
    { summary: "Switch channels on or off for a record", tags: tag("channels") },
    { keepsShared: true },
  ),
  operation(
    "records/channels/copy_from_parent",
    t.Object({ ...looseLangs, record: recordGid, channels: loose }),
    channelService.copyChannelsFromParent,
    { summary: "Copy the parent's state of the channels to the record", tags: tag("channels") },
    { keepsShared: true },
  ),
  operation(
    "records/channels/copy_down",
    t.Object({ ...looseLangs, record: recordGid, channels: loose }),
    channelService.copyChannelsDown,
    {
      summary: "Copy the record's state of the channels to its whole subtree (a job)",
      tags: tag("channels"),
    },
  ),
  operation(
    "records/channels/copy_up",
    t.Object({ ...looseLangs, record: recordGid, channels: loose }),
    channelService.copyChannelsUp,
    {
      summary: "Switch the record's enabled channels on for its ancestors",
      tags: tag("channels"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/definition/set",
    t.Object({ ...looseLangs, record: recordGid, definition: loose }),
    definitionService.setRecordDefinition,
    {
      summary: "Give the record another definition (values of shared fields kept, the rest cleared)",
      tags: tag("definition"),
    },
  ),
  operation("records/definition/revert", recordOnly, definitionService.revertRecordDefinition, {
    summary: "Give the record back the definition its extended definition extends",
    tags: tag("definition"),
  }),
  operation("records/definition/copy_to_siblings", recordOnly, definitionService.copyDefinitionToSiblings, {
    summary: "Give the record's definition to all its siblings",
    tags: tag("definition"),
  }),
  operation(
    "records/definition/classes/add",
    t.Object({ ...looseLangs, record: loose, class: str, before_class: str }),
    definitionService.addClass,
    { summary: "Add a class to the record's extended definition (made on first change)", tags: tag("definition") },
  ),
  operation(
    "records/definition/classes/remove",
    t.Object({ ...looseLangs, record: loose, class: str }),
    definitionService.removeClass,
    {
      summary: "Remove an added class from the record's extended definition",
      tags: tag("definition"),
    },
  ),
  operation(
    "records/definition/fields/add",
    t.Object({ ...looseLangs, record: loose, field: str, before_field: str }),
    definitionService.addField,
    { summary: "Add a field to the record's extended definition (made on first change)", tags: tag("definition") },
  ),
  operation(
    "records/definition/fields/remove",
    t.Object({ ...looseLangs, record: loose, field: str }),
    definitionService.removeField,
    {
      summary: "Remove an added field from the record's extended definition",
      tags: tag("definition"),
    },
  ),
  operation("records/definition/fieldlists/fields/add", fieldlistBody, definitionService.addFieldlistField, {
    summary: "Add a field to a fieldlist of the record's extended definition",
    tags: tag("definition"),
  }),
  operation("records/definition/fieldlists/fields/move", fieldlistBody, definitionService.moveFieldlistField, {
    summary: "Move a field in a fieldlist of the record's extended definition",
    tags: tag("definition"),
  }),
  operation("records/definition/fieldlists/fields/remove", fieldlistBody, definitionService.removeFieldlistField, {
    summary: "Remove a field from a fieldlist of the record's extended definition",
    tags: tag("definition"),
  }),
  operation(
    "records/definition/layouts/modify",
    t.Object({
      ...looseLangs,
      record: loose, // as in `component`: typed, it would be named before the typed members below
      name: str,
      root: str,
      components: t.Optional(t.Record(t.String(), t.Unknown())),
    }),
    definitionService.modifyLayout,
    { summary: "Modify the layout of the record's extended definition", tags: tag("definition") },
  ),
  operation("records/definition/layouts/components/create", component, definitionService.createComponent, {
    summary: "Add a component to the extended definition's layout",
    tags: tag("definition"),
  }),
  operation("records/definition/layouts/components/modify", component, definitionService.modifyComponent, {
    summary: "Modify a component of the extended definition's layout",
    tags: tag("definition"),
  }),
  operation("records/definition/layouts/components/move", component, definitionService.moveComponent, {
    summary: "Move a component of the extended definition's layout into `parent`",
    tags: tag("definition"),
  }),
  operation("records/definition/layouts/components/delete", component, definitionService.deleteComponent, {
    summary: "Delete a component (with its content) of the extended definition's layout",
    tags: tag("definition"),
  }),
  operation(
    "records/bulk/get",
    t.Object({ ...langs, selection: loose, "page.size": loose, "page.cursor": loose }),
    bulkGet,
    {
      summary: "One page of a selection (opaque page.cursor, stable under concurrent writes)",
      tags: tag("search and bulk"),
    },
    { keepsShared: true },
  ),
  operation(
    "records/bulk/delete",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "delete", body),
    { summary: "Delete every selected record (a job): answers job.token", tags: tag("search and bulk") },
  ),
  operation(
    "records/bulk/undelete",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "undelete", body),
    { summary: "Undelete every selected record (a job): answers job.token", tags: tag("search and bulk") },
  ),
  operation(
    "records/bulk/permanent_delete",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "permanent_delete", body),
    {
      summary: "Remove every selected deleted record for good (a job): answers job.token",
      tags: tag("search and bulk"),
    },
  ),
  operation(
    "records/bulk/duplicate",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "duplicate", body),
    { summary: "Duplicate every selected record (a job): answers job.token", tags: tag("search and bulk") },
  ),
  operation(
    "records/bulk/shallow_copy",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "shallow_copy", body),
    { summary: "Copy every selected record under `parent` (a job): answers job.token", tags: tag("search and bulk") },
  ),
  operation(
    "records/bulk/link",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "link", body),
    { summary: "Link every selected record under `parent` (a job): answers job.token", tags: tag("search and bulk") },
  ),
  operation(
    "records/bulk/move",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "move", body),
    { summary: "Move every selected record under `parent` (a job): answers job.token", tags: tag("search and bulk") },
  ),
  operation(
    "records/bulk/channels/set",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "channels/set", body),
    {
      summary: "Switch channels on or off for every selected record (a job): answers job.token",
      tags: tag("search and bulk"),
    },
  ),
  operation(
    "records/bulk/definition/set",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "definition/set", body),
    { summary: "Give every selected record a definition (a job): answers job.token", tags: tag("search and bulk") },
  ),
  operation(
    "records/bulk/update",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startRecordsBulk(ctx, actor, projectGid, "update", body),
    {
      summary: "Write the same values to every selected record (a job): answers job.token",
      tags: tag("search and bulk"),
    },
  ),
].map((op) => (RUN_CHECKED.has(op.path) ? { ...op, bodyErrorsWhenRun: true } : op));

const excelTags = tag("excel");

/**
 * `records/fields/preview` (draws an image) and the Excel round trip (exceljs reads and writes
 * files; the import streams its upload): asynchronous, so plain routes, not batchable.
 */
export function recordsRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project/records" })
    .use(authMacro(ctx))
    .post(
      "/fields/preview",
      async ({ params, body, actor }) => answer(await previewField(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        body: t.Object({ ...looseLangs, record: recordGid, field: loose, value: loose }),
        detail: {
          summary: "A preview image of a barcode field's value (EAN-13, UPC-A, EAN-8, GTIN-14)",
          tags: tag("values"),
        },
      },
    )
    .post(
      "/excel/children",
      async ({ params, body, actor }) => answer(await exportChildren(ctx, actor, params.project, body)),
      {
        auth: true,
        params,
        // The language first (missing before anything else, "" a 400 of languagesOf): only its type is the schema's.
        body: t.Object({
          record: loose,
          language: langs.language,
          definition: loose,
          fieldlist: loose,
          download: loose,
          selection: loose,
        }),
        detail: describe({
          summary:
            'A workbook (.xlsx) of a record\'s children in one language: result["children.excel"] names it in data.files (base64), or download.url for large ones',
          tags: excelTags,
          errors: [400, 403, 422],
          example: {
            success: true,
            result: { "children.excel": "ice-boxes-children.xlsx", "children.size": 2 },
            data: { files: { "ice-boxes-children.xlsx": "UEsDBBQACAgIA..." } },
          },
        }),
      },
    )
    .post(
      "/excel/update",
      async ({ params, request, actor }) =>
        answer(
          await importChildren(ctx, actor, params.project, () =>
            receiveMultipart(request, {
              tmpDir: ctx.storage.tmp,
              maxFileBytes: ctx.config.uploadMaxBytes,
              fileField: ["upload_file", "file"],
            }),
          ),
        ),
      {
        auth: true,
        params,
        // Streamed by receiveMultipart (see assets.routes.ts): the body is left unread here.
        parse: () => ({}),
        detail: describe({
          summary:
            "Import an edited records/excel/children workbook (streamed): rows created, updated, deleted or undeleted; up to 2 MiB in one unit of work answering counts and the marked-up workbook, larger as a records_excel_update job (job.token) whose result links the marked-up workbook",
          tags: excelTags,
          errors: [400, 403, 413, 422],
          upload: {
            file: {
              name: "upload_file",
              description: "the .xlsx made by records/excel/children, edited (`file` is accepted too)",
            },
            fields: {
              record: "optional: the parent; must be the workbook's",
              language: "optional: must be the workbook's language",
              job: "optional: `true` runs the import as a job whatever its size (uploads over 2 MiB always do)",
            },
            required: ["upload_file"],
          },
        }),
      },
    )
    .get(
      "/excel/download/:token",
      async ({ params, request }) => {
        const f = await excelDownload(ctx, params.project, params.token);
        const disposition = `attachment; filename="${f.name}"`;
        if (f.body)
          return new Response(f.body, {
            headers: { "content-type": XLSX_TYPE, "content-disposition": disposition, "cache-control": "no-store" },
          });
        // A written file, from the store: ETag, Range and HEAD as /media answers them.
        const res = await serveBlob(request, ctx.storage.blobs, f.key!, DOWNLOAD_SERVE);
        res.headers.set("content-disposition", disposition);
        return res;
      },
      {
        params: t.Object({ project: t.String(), token: t.String() }),
        detail: describe({
          summary:
            "The file of a large records/excel/children export (the link in download.url works for ten minutes, without a JWT)",
          tags: excelTags,
          file: XLSX_TYPE,
          errors: [404],
        }),
      },
    );
}

import { Elysia, t, type TSchema } from "elysia";
import type { Ctx } from "../../context";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import type { Actor } from "../schema/schema.core";
import { actorOf } from "../schema/schema.routes";
import * as S from "./records.service";
import * as T from "./records.tree";
import { searchRecords } from "./records.search";
import { BULK_OPS, bulkGet, startRecordsBulk } from "./records.bulk";
import * as CH from "./records.channels";
import * as DEF from "./records.definition";
import { getWorksheet } from "./records.worksheet";
import { previewField } from "./records.preview";
import "./records.hooks";

const params = t.Object({ project: t.String() });
const opt = t.Optional;
const any = t.Optional(t.Unknown());
const langs = { language: any, languages: any };

type Answer = { result: Record<string, unknown>; data: Record<string, unknown> };
type Service = (ctx: Ctx, actor: Actor, projectGid: string, body: any) => Answer | Promise<Answer>;

/**
 * The records endpoints under `/api/p/<project>/records/`. Bodies are objects whose members the
 * services check themselves (so a wrong type is a 400 naming the member, never a 500); each route
 * calls one service.
 */
export function recordsRoutes(ctx: Ctx) {
  const app = new Elysia({ prefix: "/api/p/:project/records" }).use(authMacro(ctx));
  const route = (path: string, summary: string, members: Record<string, TSchema>, service: Service) =>
    app.post(path, async ({ params, body, caller }: any) => {
      const r = await service(ctx, actorOf(caller), params.project, body ?? {});
      return ok(r.result, r.data);
    }, { auth: true, params, body: t.Object({ ...langs, ...members }), detail: { summary, tags: ["records"] } } as any);

  const page = { "page.top": any, "page.size": any };
  route("/root", "The project's root record (made on first use)", {}, S.getRoot);
  route("/get", "One record (`record`) or several (`records`)", { record: any, records: any }, S.getRecords);
  route("/children", "One page of a record's children, by channel and ordering", { record: any, channel: any, ordering: any, ...page }, S.getChildren);
  route("/tree", "The expanded part of the tree as a flat, paged list", { expanded_records: any, ordering: any, ...page }, T.getTree);
  route("/create", "A new last child of `parent`", { parent: any, ordering: any }, S.createRecord);
  route("/update", "Values per language; answers report.validation", { record: any, fields: any }, S.updateRecord);
  const place = { record: any, parent: any, ordering: any, before_record: any };
  route("/move", "Move a record with its subtree", place, T.moveRecord);
  route("/orderings/set", "Raw positions of a record in some orderings", { record: any, orderings: any }, T.setOrderings);
  route("/copy", "Copy a record with its subtree (a job for large subtrees)", place, T.copyRecord);
  route("/shallow_copy", "Copy a record without its subtree", place, T.shallowCopy);
  route("/duplicate", "Copy a record right after itself", { record: any, ordering: any }, T.duplicateRecord);
  route("/link", "A linked copy kept in step with its canonical record", place, T.linkRecord);
  route("/unlink", "Make a linked copy a record of its own", { record: any }, T.unlinkRecord);
  route("/delete", "Delete a record with its subtree and links (undeletable)", { record: any }, T.deleteRecord);
  route("/undelete", "Restore a deleted record with its subtree and links", { record: any }, T.undeleteRecord);
  route("/permanent_delete", "Remove a deleted record for good (a job)", { record: any }, T.permanentDeleteRecord);
  route("/search", "Search records: full text `q` (+/- terms) and/or `filter`, best match first", { q: any, filter: any, ...page }, searchRecords);
  route("/worksheet", "A parent's grid: path, one page of children, sibling_definitions", { record: any, ordering: any, ...page }, getWorksheet);
  route("/fields/preview", "A preview image of a (barcode) field value", { record: any, field: any, value: any }, previewField);

  route("/channels/set", "Switch channels on or off for a record", { record: any, channels: any, enabled: any }, CH.setChannels);
  route("/channels/copy_from_parent", "Copy the parent's channel state to the record", { record: any, channels: any }, CH.copyChannelsFromParent);
  route("/channels/copy_down", "Copy the record's channel state to its whole subtree (a job)", { record: any, channels: any }, CH.copyChannelsDown);
  route("/channels/copy_up", "Switch the record's enabled channels on for its ancestors", { record: any, channels: any }, CH.copyChannelsUp);

  const d = "/definition";
  route(`${d}/set`, "Give the record another definition (shared values kept)", { record: any, definition: any }, DEF.setRecordDefinition);
  route(`${d}/revert`, "Give the record back the definition its extended definition extends", { record: any }, DEF.revertRecordDefinition);
  route(`${d}/copy_to_siblings`, "Give the record's definition to all its siblings", { record: any }, DEF.copyDefinitionToSiblings);
  route(`${d}/classes/add`, "Add a class to the record's extended definition", { record: any, class: any, before_class: any }, DEF.addClass);
  route(`${d}/classes/remove`, "Remove an added class from the record's extended definition", { record: any, class: any }, DEF.removeClass);
  route(`${d}/fields/add`, "Add a field to the record's extended definition", { record: any, field: any, before_field: any }, DEF.addField);
  route(`${d}/fields/remove`, "Remove an added field from the record's extended definition", { record: any, field: any }, DEF.removeField);
  const fl = { record: any, fieldlist: any, field: any, before_field: any };
  route(`${d}/fieldlists/fields/add`, "Add a field to a fieldlist of the record's extended definition", fl, DEF.addFieldlistField);
  route(`${d}/fieldlists/fields/move`, "Move a field in a fieldlist of the record's extended definition", fl, DEF.moveFieldlistField);
  route(`${d}/fieldlists/fields/remove`, "Remove a field from a fieldlist of the record's extended definition", fl, DEF.removeFieldlistField);
  route(`${d}/layouts/modify`, "Modify the layout of the record's extended definition", { record: any, name: any, root: any, components: any }, DEF.modifyLayout);
  const comp = { record: any, component: any, parent: any, type: any, name: any, options: any, before_component: any };
  route(`${d}/layouts/components/create`, "Add a component to the extended definition's layout", comp, DEF.createComponent);
  route(`${d}/layouts/components/modify`, "Modify a component of the extended definition's layout", comp, DEF.modifyComponent);
  route(`${d}/layouts/components/move`, "Move a component of the extended definition's layout", comp, DEF.moveComponent);
  route(`${d}/layouts/components/delete`, "Delete a component of the extended definition's layout", comp, DEF.deleteComponent);

  route("/bulk/get", "One page of a selection (opaque page.cursor, stable under concurrent writes)", { selection: any, "page.size": any, "page.cursor": any }, bulkGet);
  for (const op of Object.keys(BULK_OPS))
    route(`/bulk/${op}`, `${op} every selected record, as a job (answers job.token)`, { selection: any, parent: any, ordering: any, before_record: any, channels: any, enabled: any, definition: any, fields: any }, (c, a, p, body) => startRecordsBulk(c, a, p, op, body));
  return app;
}

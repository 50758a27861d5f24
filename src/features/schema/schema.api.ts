/**
 * The front door of the schema feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/schema/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { Out, asRecordExtension, freeName, insertItem, layoutOf, removeItem } from "./copies.service";
export {
  addDefinitionClass,
  addDefinitionField,
  addFieldlistField,
  baseDefinitionIn,
  definitionFields,
  moveFieldlistField,
  removeDefinitionClass,
  removeDefinitionField,
  removeFieldlistField,
} from "./definitions.service";
export {
  isCommitted,
  mustBeCommitted,
  mustGet,
  rowOf,
  rowsOf,
  schemaStamp,
  snapshotValue,
  valueContextOf,
} from "./items.service";
export type { SchemaRow } from "./items.service";
export { createComponent, deleteComponent, modifyComponent, modifyLayout } from "./layouts.service";
export type { ComponentInput, LayoutModifyInput, LayoutSpec } from "./layouts.service";
export { schemaDomain } from "./schema.search";
export { LIST_TYPES, valueSchema } from "./schema.types";
export type { FieldLike, FieldType } from "./schema.types";

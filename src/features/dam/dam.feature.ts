import type { Feature } from "../feature";
import { damRoutes } from "./dam.routes";
import { dropTransforms } from "./dam.service";

/** /dam: image transforms, publish/unpublish of originals, asset info. */
export const damFeature: Feature = { name: "dam", routes: damRoutes, hooks: { assetsRemoved: dropTransforms } };

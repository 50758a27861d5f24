import pkg from "../package.json";

/** `cc.version`: a dotted year.month.sequence string, taken from package.json. */
export const VERSION: string = pkg.version;

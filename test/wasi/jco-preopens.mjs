// Loaded by `jco run --jco-import` (table.mjs's jco column) before the
// component: mounts the folder named in CORRAL_CONFORMANCE_FOLDER at the
// guest's /sandbox instead of preview2-shim's default (the host's /), and
// takes that variable out of the environment the guest will see.
const folder = process.env.CORRAL_CONFORMANCE_FOLDER;
delete process.env.CORRAL_CONFORMANCE_FOLDER;
const shim = new URL(
  '../../node_modules/@bytecodealliance/jco/node_modules/@bytecodealliance/preview2-shim/lib/nodejs/filesystem.js',
  import.meta.url,
);
const { _setPreopens } = await import(shim.href);
_setPreopens({ '/sandbox': folder });

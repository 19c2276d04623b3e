/**
 * kr.cjs, the `kr` bin of the client package (scripts/client-package.mjs puts this file there, and in
 * cli/kr.mjs's cached build): runs kr's code, chunks/main.cjs and the chunks it requires, through V8's code
 * cache. A CommonJS file itself: node starts one some 5 ms sooner than an ES module.
 *
 * Node 20 compiles every ES module from scratch at each start, and has no code cache for them; a script can
 * be given the bytecode a previous run produced instead (vm.Script's cachedData). kr's chunks are therefore
 * CommonJS scripts (esbuild's code splitting, then each chunk turned into CommonJS), loaded here: a chunk is
 * read, compiled with its cache `chunks/<chunk>.cache` when there is one, and run once; `require('./x.cjs')`
 * loads another chunk the same way (a command still loads only its own chunks); any other name is node's
 * own require (node: modules). A cache is the SHA-1 of the chunk it was made from, the SHA-1 of the bytecode,
 * then the bytecode: one made from other code, or damaged, is not offered to V8; one V8 rejects (another node
 * version or flags) is not used either. Chunks compiled without a cache get one written when the process
 * exits (after the command ran, so the functions it compiled are in it), beside and then renamed over the
 * old one; where the package is read-only nothing is written and every start compiles, as without a cache.
 */
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const { dirname, join } = require('node:path');
const { Script } = require('node:vm');

const chunksDir = join(__dirname, 'chunks');
const nodeRequire = createRequire(join(chunksDir, 'main.cjs'));
// An identity and a checksum, not a defence: whoever can write the chunks can write the code itself.
const sha1 = (data) => createHash('sha1').update(data).digest();
const HEADER = 40;

/** Chunk path → its module ({exports}), set before the chunk runs (as node's require does). */
const modules = new Map();
/** The chunks compiled without a usable cache: {file, codeSha, script}. */
const uncached = [];

function readCache(file, codeSha) {
  let data;
  try {
    data = readFileSync(`${file}.cache`);
  } catch {
    return undefined;
  }
  if (data.length <= HEADER || !data.subarray(0, 20).equals(codeSha)) return undefined;
  const bytecode = data.subarray(HEADER);
  return sha1(bytecode).equals(data.subarray(20, HEADER)) ? bytecode : undefined;
}

function writeCache({ file, codeSha, script }) {
  const tmp = `${file}.cache.${process.pid}.tmp`;
  try {
    const data = script.createCachedData();
    writeFileSync(tmp, Buffer.concat([codeSha, sha1(data), data]));
    renameSync(tmp, `${file}.cache`);
  } catch {
    rmSync(tmp, { force: true });
  }
}

function load(file) {
  const known = modules.get(file);
  if (known !== undefined) return known.exports;
  const module = { exports: {} };
  modules.set(file, module);
  const code = readFileSync(file);
  const codeSha = sha1(code);
  const cachedData = readCache(file, codeSha);
  // The chunks are ASCII (esbuild's charset option), so latin1 decodes them exactly and fastest.
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${code.toString('latin1')}\n})`, { filename: file, cachedData });
  if (cachedData === undefined || script.cachedDataRejected) uncached.push({ file, codeSha, script });
  const dir = dirname(file);
  const require = (id) => (id.startsWith('./') ? load(join(dir, id)) : nodeRequire(id));
  script.runInThisContext()(module.exports, require, module, file, dir);
  return module.exports;
}

process.once('exit', () => {
  for (const chunk of uncached) writeCache(chunk);
});
load(join(chunksDir, 'main.cjs'));

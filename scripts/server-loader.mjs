/**
 * dist/server.mjs (scripts/bundle.mjs copies this file there): runs the server bundle beside it
 * (dist/server.cjs) through V8's code cache, then calls its `main`.
 *
 * Node 20 compiles an ES module from scratch on every start; a script can be given the bytecode a previous
 * run produced instead (vm.Script's cachedData), which saves most of the compiling of a 1.5 MB bundle
 * (about 80 ms of a 300 ms boot here). The cache is dist/server.cjs.cache: the SHA-1 of the bundle it was
 * made from, the SHA-1 of the bytecode, then the bytecode. A cache made from another bundle, or damaged, is
 * not offered to V8; one V8 rejects (another node version or flags) is not used either. Either way this run
 * compiles as usual and, once the server is listening, writes a new cache (beside, then renamed over the
 * old one: concurrent starts each write a whole file). Where dist/ is read-only, nothing is written and
 * every start compiles. `node dist/server.mjs --write-code-cache` loads the bundle, writes the cache and
 * exits without starting the server (the Dockerfile's build step, run with the server's node flags).
 *
 * Once the cache is settled (used, or written), V8 is told to favour memory over speed (LEAN_V8_FLAGS): its
 * heap then grows in smaller steps and gives memory back sooner, and the young generation stays at its first
 * size (1 MiB a semi-space, where V8 would double it up to 16 while many objects survive). It costs speed:
 * every major collection then reduces memory, throwing compiled code away, and 16 clients pushing at once
 * take about 1.6 times as long once the server's code is warm. With the second flag alone, a full
 * `npm run bench` peaked at 450 instead of 230 MiB and a 100,000-page pull held the event loop for 236–255 ms
 * instead of 46–81 (W9·health's target is 100 ms): docs/performance.md "Round 3: V8's flags". Set on the
 * command line instead, the same flags cost every start
 * 40 ms or so (node does not use its startup snapshot under other V8 flags), and it changes the flag hash a
 * code cache is checked against: set before the cache was written, every next start would reject it.
 */
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script, constants } from 'node:vm';

const filename = fileURLToPath(import.meta.url).replace(/\.mjs$/, '.cjs');
const cacheFile = `${filename}.cache`;
const code = readFileSync(filename);
// An identity and a checksum, not a defence: whoever can write dist/ can write the bundle itself.
const sha1 = (data) => createHash('sha1').update(data).digest();
const codeSha = sha1(code);
const HEADER = 40;
/** V8 flags set once the code cache is settled (see above). */
const LEAN_V8_FLAGS = ['--optimize-for-size', '--semi-space-growth-factor=1'];

function leanHeap() {
  for (const flag of LEAN_V8_FLAGS) setFlagsFromString(flag);
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', event: 'v8_flags', flags: LEAN_V8_FLAGS })}\n`);
}

function readCache() {
  let file;
  try {
    file = readFileSync(cacheFile);
  } catch {
    return undefined;
  }
  if (file.length <= HEADER || !file.subarray(0, 20).equals(codeSha)) return undefined;
  const data = file.subarray(HEADER);
  return sha1(data).equals(file.subarray(20, HEADER)) ? data : undefined;
}

function writeCache() {
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  try {
    const data = script.createCachedData();
    writeFileSync(tmp, Buffer.concat([codeSha, sha1(data), data]));
    renameSync(tmp, cacheFile);
    return true;
  } catch {
    rmSync(tmp, { force: true });
    return false;
  }
}

const cachedData = readCache();
// The bundle is ASCII (scripts/bundle.mjs escapes the rest), so latin1 decodes it exactly and fastest.
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${code.toString('latin1')}\n})`, {
  filename,
  cachedData,
  importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(filename), module, filename, dirname(filename));

if (process.argv.includes('--write-code-cache')) {
  if (!writeCache()) {
    process.stderr.write(`could not write ${cacheFile}\n`);
    process.exit(1);
  }
} else {
  const codeCache = cachedData === undefined ? 'miss' : script.cachedDataRejected ? 'rejected' : 'hit';
  await module.exports.main({ codeCache });
  // Written a little after the listening line, so that the code the first requests compile is in it too;
  // the lean heap only then, so that the cache is made under the flags the next start reads it with.
  if (codeCache === 'hit') leanHeap();
  else {
    setTimeout(() => {
      writeCache();
      leanHeap();
    }, 1000).unref();
  }
}

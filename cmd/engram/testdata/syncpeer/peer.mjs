// An automerge-repo 2.x peer for engram serve's /sync tests
// (cmd/engram/sync_test.go): one Repo with the stock WebSocketClientAdapter
// per "peer" name, driven by JSON commands on stdin, one JSON answer per
// line on stdout.
import { Repo, splice } from "@automerge/automerge-repo";
import * as A from "@automerge/automerge/slim";
import { WebSocketClientAdapter } from "@automerge/automerge-repo-network-websocket";
import readline from "node:readline";

const repos = new Map(); // peer name → {repo, handles, refusals}
function peer(name, ws) {
  if (!repos.has(name)) {
    repos.set(name, { repo: new Repo({ network: [new WebSocketClientAdapter(ws, 500)] }), handles: new Map(), refusals: [] });
  }
  return repos.get(name);
}
async function handle(p, url) {
  if (!p.handles.has(url)) {
    const h = await p.repo.find(url);
    h.on("ephemeral-message", (e) => p.refusals.push(e.message));
    p.handles.set(url, h);
  }
  return p.handles.get(url);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run(c) {
  const p = peer(c.peer ?? "a", c.ws);
  switch (c.op) {
    case "find": {
      const h = await handle(p, c.url);
      return { value: h.doc() };
    }
    case "splice": {
      const h = await handle(p, c.url);
      h.change((d) => splice(d, c.path, c.pos ?? d[c.path[0]].length, c.del ?? 0, c.text));
      return { value: h.doc() };
    }
    case "set": {
      // d[path[0]]...[path[n-1]] = value
      const h = await handle(p, c.url);
      h.change((d) => {
        let o = d;
        for (const k of c.path.slice(0, -1)) o = o[k];
        o[c.path[c.path.length - 1]] = c.value;
      });
      return { value: h.doc() };
    }
    case "wait": {
      // until the field equals (or contains) the wanted text
      const h = await handle(p, c.url);
      const start = performance.now();
      for (;;) {
        let o = h.doc();
        for (const k of c.path ?? [c.field]) o = o?.[k];
        const v = String(o ?? "");
        if (c.equals !== undefined ? v === c.equals : v.includes(c.contains)) {
          return { value: h.doc(), ms: performance.now() - start, refusals: p.refusals };
        }
        if (performance.now() - start > (c.timeout ?? 5000)) {
          return { error: "timeout", value: h.doc(), refusals: p.refusals };
        }
        await sleep(2);
      }
    }
    case "firstsync": {
      // bytes automerge JS (sync format v2) sends to bring an empty peer
      // to the saved document c.doc (base64), both directions summed
      let full = A.load(Buffer.from(c.doc, "base64"));
      let empty = A.init();
      let s1 = A.initSyncState(), s2 = A.initSyncState();
      let bytes = 0, rounds = 0;
      for (;;) {
        let m1, m2;
        [s1, m1] = A.generateSyncMessage(full, s1);
        if (m1) { bytes += m1.length; [empty, s2] = A.receiveSyncMessage(empty, s2, m1); }
        [s2, m2] = A.generateSyncMessage(empty, s2);
        if (m2) { bytes += m2.length; [full, s1] = A.receiveSyncMessage(full, s1, m2); }
        rounds++;
        if ((!m1 && !m2) || rounds > 20) break;
      }
      return { bytes, rounds, same: A.getHeads(empty).join() === A.getHeads(full).join() };
    }
    case "close": {
      for (const q of repos.values()) q.repo.shutdown();
      return {};
    }
  }
  return { error: "unknown op " + c.op };
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  const c = JSON.parse(line);
  let out;
  try {
    out = await run(c);
  } catch (e) {
    out = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify({ id: c.id, ...out }) + "\n");
  if (c.op === "close") setTimeout(() => process.exit(0), 50);
});
console.log(JSON.stringify({ ready: true }));

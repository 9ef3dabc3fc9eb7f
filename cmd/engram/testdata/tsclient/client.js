// The official TypeScript MCP SDK against engram serve, for
// TestServeTypeScriptClient: node client.js URL TOKEN BAD_TOKEN.
// It prints "ready" once it listens for resource list changes, waits for
// one (the Go test then creates a block), and ends with one JSON line of
// what it saw. Any failure exits non-zero with the error on stderr.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, badToken] = process.argv.slice(2);

function transport(secret) {
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${secret}` } },
  });
}

function text(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("");
}

const out = {};
const client = new Client({ name: "engram-ts-test", version: "0.0.0" });
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => changed(true));
await client.connect(transport(token));
out.server = client.getServerVersion().name;
out.tools = (await client.listTools()).tools.map((t) => t.name);

const append = await client.callTool({ name: "block_append", arguments: { label: "notes", text: "Written from TypeScript." } });
out.appendError = append.isError ?? false;
const read = await client.readResource({ uri: "engram://ada/notes" });
out.readBack = read.contents[0].text;
await client.callTool({ name: "archival_insert", arguments: { content: "TypeScript found the kumquat." } });
out.search = text(await client.callTool({ name: "archival_search", arguments: { query: "kumquat" } }));
out.resources = (await client.listResources()).resources.map((r) => r.uri);

// Notifications: the Go test creates a block when it reads "ready".
process.stdout.write("ready\n");
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once("line", resolve));
out.listChanged = await Promise.race([listChanged, new Promise((r) => setTimeout(() => r(false), 10000))]);
out.resourcesAfter = (await client.listResources()).resources.map((r) => r.uri);
await client.close();

// A bad token: 401, nothing done.
try {
  const bad = new Client({ name: "engram-ts-bad", version: "0.0.0" });
  await bad.connect(transport(badToken));
  out.badToken = "connected";
} catch (err) {
  out.badToken = String(err.code ?? err.message);
}
lines.close();
process.stdout.write(JSON.stringify(out) + "\n");

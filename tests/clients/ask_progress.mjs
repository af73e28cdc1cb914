// memory_ask through the official TypeScript SDK client, counting progress notifications.
//
//   node ask_progress.mjs stdio <command> [args…]   spawn a stdio server (e.g. cairn mcp --data-dir D)
//   node ask_progress.mjs http <url>                a streamable HTTP endpoint (…/mcp)
//
// Environment: ASKS (default 20), the number of memory_ask calls in one session.
// Prints one JSON object: {"brain": id, "asks": [{"query", "progress", "messages", "late", "result"}],
// "errors": [...]}
// where progress/messages are the notifications received before callTool resolved and late counts
// those the SDK reported after the result (it drops them: "unknown token").
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const NOTES = [
  "I finished the 10k route along the river in under 55 minutes on a cold Sunday morning in March.",
  "Green tea is best steeped at 80 degrees for two minutes, otherwise it turns bitter and loses its aroma.",
  "The heron nests by the old mill every spring and fishes in the shallow water below the weir at dawn.",
];
const QUESTIONS = [
  "how long did the 10k route along the river take",
  "at what temperature should green tea be steeped",
  "where does the heron nest and fish",
];

function transportFor(kind, rest) {
  if (kind === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, env: process.env, stderr: "pipe" });
  }
  if (kind === "http") return new StreamableHTTPClientTransport(new URL(rest[0]));
  throw new Error(`unknown transport ${kind}`);
}

function structured(result) {
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

async function main() {
  const [kind, ...rest] = process.argv.slice(2);
  const asks = Number(process.env.ASKS ?? "20");
  const transport = transportFor(kind, rest);
  let stderr = "";
  transport.stderr?.on("data", (chunk) => (stderr += chunk));
  const client = new Client({ name: "cairn-ask-progress", version: "1.0.0" });
  let late = 0;
  const errors = [];
  client.onerror = (error) => {
    if (String(error).includes("progress notification for an unknown token")) late += 1;
    else errors.push(String(error));
  };
  try {
    await client.connect(transport);
    const brain = structured(
      await client.callTool({ name: "memory_create_brain", arguments: { name: "Progress" } }),
    ).id;
    for (const content of NOTES) {
      structured(await client.callTool({ name: "memory_remember", arguments: { content, brain } }));
    }
    const out = [];
    for (let i = 0; i < asks; i += 1) {
      const progress = [];
      const messages = [];
      late = 0;
      const result = await client.callTool(
        { name: "memory_ask", arguments: { query: QUESTIONS[i % QUESTIONS.length], brain } },
        undefined,
        {
          onprogress: (p) => {
            progress.push(p.progress);
            messages.push(p.message ?? "");
          },
        },
      );
      const answer = structured(result);
      // Let anything still queued behind the result be delivered, so it is counted as late.
      await new Promise((resolve) => setTimeout(resolve, 20));
      out.push({ query: QUESTIONS[i % QUESTIONS.length], progress, messages, late, result: answer });
    }
    process.stdout.write(`${JSON.stringify({ brain, asks: out, errors })}\n`);
  } catch (error) {
    process.stderr.write(`${error?.stack ?? error}\n${stderr}`);
    process.exitCode = 1;
  } finally {
    await client.close();
  }
}

await main();

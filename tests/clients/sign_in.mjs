// Signing in to Cairn with the official TypeScript SDK's OAuth client, with no client id configured:
// discovery from the 401, Cairn's authorization-server metadata, dynamic registration, the
// authorization code with PKCE against the (fake) Cognito, then one tool call.
//
//   node sign_in.mjs <redirect uri> '<json: [{"url", "tool", "args"}, …]>'
//
// Each endpoint gets a client of its own, as each server entry of an MCP client configuration does.
// The "browser" follows the authorize URL without following its redirect, and takes the code from
// the Location it points at. The SDK may start two sign-ins at once (a refused tool call and the
// GET stream both answer 401), each registering and saving its own verifier, as a user may open
// two sign-in tabs: the first to reach the browser is the one finished, with the client and the
// verifier its authorize URL names (client_id, code_challenge); the other is never opened. Prints one JSON object: {"results": [{"url", "client_id", "authorize",
// "callback", "isError", "structured", "text"}], "errors": [...]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createHash } from "node:crypto";

const s256 = (verifier) => createHash("sha256").update(verifier).digest("base64url");

class MemoryProvider {
  constructor(redirectUri) {
    this._redirect = redirectUri;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._clients = new Map();
    this._verifiers = new Map();
    this._opened = false;
    this.signIn = undefined;
    this.signedIn = new Promise((resolve, reject) => {
      this._signedIn = resolve;
      this._failed = reject;
    });
    this.signedIn.catch(() => {}); // reported by code(), when the sign-in is waited for
  }
  get authorize() {
    return this.signIn?.authorize;
  }
  get callback() {
    return this.signIn?.callback;
  }
  get redirectUrl() {
    return this._redirect;
  }
  get clientMetadata() {
    return {
      client_name: "Cairn sign-in test (TypeScript SDK)",
      redirect_uris: [this._redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    return crypto.randomUUID();
  }
  clientInformation() {
    return this.signIn?.client ?? this._client;
  }
  saveClientInformation(info) {
    this._client = info;
    this._clients.set(info.client_id, info);
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
  }
  saveCodeVerifier(verifier) {
    this._verifier = verifier;
    this._verifiers.set(s256(verifier), verifier);
  }
  codeVerifier() {
    return this.signIn?.verifier ?? this._verifier;
  }
  async redirectToAuthorization(url) {
    if (this._opened) return;
    this._opened = true;
    const asked = new URL(url).searchParams;
    const client = this._clients.get(asked.get("client_id"));
    const verifier = this._verifiers.get(asked.get("code_challenge"));
    const answer = await fetch(url, { redirect: "manual" });
    if (answer.status !== 302) {
      const error = new Error(`authorize answered ${answer.status}: ${await answer.text()}`);
      this._failed(error);
      throw error;
    }
    this.signIn = { authorize: String(url), callback: answer.headers.get("location"), client, verifier };
    this._signedIn();
  }
  async code() {
    await this.signedIn;
    const code = new URL(this.callback).searchParams.get("code");
    if (!code) throw new Error(`the sign-in came back without a code: ${this.callback}`);
    return code;
  }
}

async function callOnce(url, provider, tool, args) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: "cairn-sign-in-test", version: "1.0.0" });
  try {
    await client.connect(transport);
    return await client.callTool({ name: tool, arguments: args });
  } finally {
    await client.close().catch(() => {});
  }
}

async function signInAndCall(url, redirectUri, tool, args) {
  const provider = new MemoryProvider(redirectUri);
  let result;
  try {
    result = await callOnce(url, provider, tool, args);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    await transport.finishAuth(await provider.code());
    result = await callOnce(url, provider, tool, args);
  }
  const text = result.content?.[0]?.type === "text" ? result.content[0].text : null;
  return {
    url,
    client_id: provider.clientInformation()?.client_id ?? null,
    authorize: provider.authorize ?? null,
    callback: provider.callback ?? null,
    isError: Boolean(result.isError),
    structured: result.structuredContent ?? null,
    text,
  };
}

async function main() {
  const [redirectUri, callsJson] = process.argv.slice(2);
  const results = [];
  const errors = [];
  for (const { url, tool, args } of JSON.parse(callsJson)) {
    try {
      results.push(await signInAndCall(url, redirectUri, tool, args ?? {}));
    } catch (error) {
      errors.push(`${url}: ${error?.stack ?? error}`);
    }
  }
  process.stdout.write(JSON.stringify({ results, errors }) + "\n");
}

await main();

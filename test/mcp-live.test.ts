import { mcpLiveCases } from './mcp-live-cases.ts';

/** The agent tool server's resource subscriptions (docs/agents.md "Live updates") against the Node server. */
mcpLiveCases('node');

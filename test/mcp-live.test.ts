import { mcpLiveCases } from './mcp-live-cases.ts';

/** The agent tool server's resource subscriptions (issue 31) against the Node server. */
mcpLiveCases('node');

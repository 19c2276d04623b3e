import { mcpMergeCases } from './mcp-merge-cases.ts';

/** Section merge in the agent tool server against the Node server (the same cases run under workerd too). */
mcpMergeCases('node');

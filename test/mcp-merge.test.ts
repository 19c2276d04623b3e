import { mcpMergeCases } from './mcp-merge-cases.ts';

/** Issue 30's agent tool server items (section merge) against the Node server (the same cases run under workerd too). */
mcpMergeCases('node');

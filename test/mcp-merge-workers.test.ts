import { mcpMergeCases } from './mcp-merge-cases.ts';

/** Issue 30's agent tool server items (section merge) against the hosted build in workerd. */
mcpMergeCases('workers');

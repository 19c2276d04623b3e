import { mcpMergeCases } from './mcp-merge-cases.ts';

/** Section merge in the agent tool server against the hosted build in workerd. */
mcpMergeCases('workers');

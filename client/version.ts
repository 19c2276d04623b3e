/** The version of the `kr` client and its agent tool server. */
export const VERSION = '0.1.0';

/**
 * The headers of the requests between the Worker and a repository's Durable Object (lib/git/repo-object.ts),
 * apart from the object's module so that code running on Node (the dev-worker admin channel, the benchmark)
 * can name them without loading `cloudflare:workers`.
 */

/** The request header that carries an event stream's parameters from the Worker (RemoteLive.stream). */
export const STREAM_PARAMS_HEADER = 'x-kr-stream';

/** The request header that asks for a pull's or an export's body (RepoObject.body), with its BodyParams. */
export const BODY_PARAMS_HEADER = 'x-kr-body';
/** Set on a body request's answer that is an error (an RpcResult as JSON). */
export const BODY_ERROR_HEADER = 'x-kr-error';
/** A pull body's answer: `1` when it holds any page. */
export const PAGES_HEADER = 'x-kr-pages';

/**
 * Checks real responses against the OpenAPI document (lib/framework/openapi.ts): the operation is found by method
 * and path template, the status must be one the document lists for it, the media type one it declares,
 * the headers it marks required present, and a JSON body must validate (ajv, JSON Schema draft 2020-12)
 * against the response's schema. test/helpers/targets.ts runs every response of the end-to-end suites
 * through it; a request to a path or method the document does not list is not checked (unknown routes,
 * 405s).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

type Json = Record<string, any>;

// ajv-formats is CommonJS: its default export arrives wrapped or not depending on the loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => void;

const COMPONENTS_ID = 'urn:kr:openapi-components';
/** `#/components/schemas/X` → the same schema inside the components schema ajv holds. */
const rebase = (schema: unknown): unknown =>
  JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS_ID}#/$defs/`));

interface Operation {
  template: string;
  params: number;
  pattern: RegExp;
  op: Json;
}

export class ResponseChecker {
  readonly #doc: Json;
  readonly #ops = new Map<string, Operation[]>();
  readonly #ajv = new Ajv2020({ strict: true, allErrors: true });
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(doc: Json) {
    this.#doc = doc;
    addFormats(this.#ajv);
    // The components once, as one schema of their own that every compiled schema refers into.
    this.#ajv.addSchema({ $id: COMPONENTS_ID, $defs: rebase(doc.components?.schemas ?? {}) });
    for (const [template, item] of Object.entries(doc.paths as Json)) {
      const names = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const source = template
        .split(/\{\w+\}/)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .reduce((acc, part, i) => acc + (i === 0 ? '' : names[i - 1] === 'path' ? '(.+)' : '([^/]+)') + part, '');
      for (const [method, op] of Object.entries(item as Json)) {
        const list = this.#ops.get(method) ?? [];
        list.push({ template, params: names.length, pattern: new RegExp(`^${source}$`), op });
        this.#ops.set(method, list);
      }
    }
    // A literal segment wins over a parameter (`/v1/repos/join` before `/v1/repos/{id}`).
    for (const list of this.#ops.values()) list.sort((a, b) => a.params - b.params);
  }

  /** The documented operation of a request, if any. */
  operation(method: string, path: string): { template: string; op: Json } | null {
    const bare = path.split('?')[0]!;
    const found = this.#ops.get(method.toLowerCase())?.find((o) => o.pattern.test(bare));
    return found ? { template: found.template, op: found.op } : null;
  }

  /**
   * What is wrong with `res` as the answer to `method path`, or null when it matches the document (or the
   * document does not list the route). Reads the body of `res`: pass a clone.
   */
  async check(method: string, path: string, res: Response): Promise<string | null> {
    const found = this.operation(method, path);
    if (!found || found.op['x-undocumented']) return null;
    const where = `${method.toUpperCase()} ${path.split('?')[0]} (${found.template}) → ${res.status}`;
    let response: Json | undefined = found.op.responses?.[String(res.status)];
    if (!response) return `${where}: status not in the document (it lists ${Object.keys(found.op.responses).join(', ')})`;
    if (typeof response.$ref === 'string') response = this.#resolve(response.$ref);
    for (const [name, header] of Object.entries((response!.headers ?? {}) as Json)) {
      const h = typeof header.$ref === 'string' ? this.#resolve(header.$ref) : header;
      if (h.required && !res.headers.has(name)) return `${where}: required header ${name} missing`;
    }
    const content = response!.content as Json | undefined;
    // An event stream stays open: its status and media type are checked, its text is the route's tests' to read.
    // (Not awaited: the cancel of one branch of a cloned body settles only once the other branch is cancelled too.)
    if ((res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase() === 'text/event-stream' && content?.['text/event-stream']) {
      void res.body?.cancel().catch(() => undefined);
      return null;
    }
    const text = await res.text();
    if (!content) return text === '' ? null : `${where}: the document gives no body, got ${JSON.stringify(text.slice(0, 200))}`;
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const media = Object.entries(content).find(([t]) => t.split(';')[0]!.trim().toLowerCase() === type);
    if (!media) return `${where}: content type ${JSON.stringify(type)} not in the document (${Object.keys(content).join(', ')})`;
    const schema = (media[1] as Json).schema as Json | undefined;
    if (!schema) return null;
    let body: unknown = text;
    if (type === 'application/json') {
      try {
        body = JSON.parse(text);
      } catch {
        return `${where}: body is not JSON: ${JSON.stringify(text.slice(0, 200))}`;
      }
    }
    return this.validate(schema, body, where);
  }

  /** Validates `body` against a schema of the document; the problem, or null. */
  validate(schema: Json, body: unknown, where = 'body'): string | null {
    const key = JSON.stringify(schema);
    let fn = this.#compiled.get(key);
    if (!fn) {
      fn = this.#ajv.compile(rebase(schema) as Json);
      this.#compiled.set(key, fn);
    }
    if (fn(body)) return null;
    const errors = (fn.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
    return `${where}: body does not match its schema: ${errors.join('; ')}; body ${JSON.stringify(body).slice(0, 300)}`;
  }

  #resolve(ref: string): Json {
    let node: any = this.#doc;
    for (const part of ref.replace(/^#\//, '').split('/')) node = node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    if (node === undefined) throw new Error(`unresolved $ref ${ref}`);
    return node as Json;
  }
}

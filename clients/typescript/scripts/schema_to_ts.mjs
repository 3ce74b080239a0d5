// JSON Schema (the subset schemas/json/gateway/ uses) to TypeScript type text.
//
// Objects list their properties (optional unless `required`); objects that allow more
// properties (the result schemas: "answers may carry more fields") get an index
// signature of `unknown`. `oneOf`/`anyOf` are unions, `enum`/`const` literal unions,
// `type: [a, b]` a union of both, `$ref` a named type.

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `cxp.send` -> `CxpSend`, `resolve_escalation` -> `ResolveEscalation`. */
export function pascal(name) {
  return name
    .split(/[._\-]/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
}

/** `resolve_escalation` -> `resolveEscalation`. */
export function camel(name) {
  const p = pascal(name);
  return p[0].toLowerCase() + p.slice(1);
}

/** A JSDoc comment for `text` at `indent`, or nothing. */
export function doc(text, indent) {
  if (!text) return '';
  const safe = String(text).replace(/\*\//g, '*\\/');
  return `${indent}/** ${safe.split('\n').join(`\n${indent} * `)} */\n`;
}

function literal(v) {
  return JSON.stringify(v);
}

function key(name) {
  return IDENT.test(name) ? name : `'${name.replace(/'/g, "\\'")}'`;
}

function union(parts) {
  const unique = [...new Set(parts)];
  return unique.length === 1 ? unique[0] : unique.map((p) => (p.includes(' | ') && !p.startsWith('{') ? `(${p})` : p)).join(' | ');
}

function objectType(s, ref, indent) {
  const props = s.properties || {};
  const required = new Set(s.required || []);
  const inner = `${indent}  `;
  const lines = [];
  for (const [name, p] of Object.entries(props)) {
    lines.push(`${doc(p.description, inner)}${inner}${key(name)}${required.has(name) ? '' : '?'}: ${schemaType(p, ref, inner)};`);
  }
  for (const name of required) {
    if (!(name in props)) lines.push(`${inner}${key(name)}: unknown;`);
  }
  const extra = s.additionalProperties;
  if (extra === undefined || extra === true) {
    lines.push(`${inner}[key: string]: unknown;`);
  } else if (extra && typeof extra === 'object') {
    lines.push(`${inner}[key: string]: ${schemaType(extra, ref, inner)};`);
  }
  if (!lines.length) return 'Record<string, never>';
  return `{\n${lines.join('\n')}\n${indent}}`;
}

function single(type, s, ref, indent) {
  switch (type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return s.items ? `Array<${schemaType(s.items, ref, indent)}>` : 'unknown[]';
    case 'object':
      return objectType(s, ref, indent);
    default:
      throw new Error(`unsupported type ${type}`);
  }
}

/** The TypeScript type of schema `s`; `ref(name)` names a `$ref`. */
export function schemaType(s, ref, indent) {
  if (s === true || s === undefined) return 'unknown';
  if (s.$ref) return ref(s.$ref);
  if (s.const !== undefined) return literal(s.const);
  if (s.enum) return union(s.enum.map(literal));
  const alts = s.oneOf || s.anyOf;
  if (alts) {
    const base = { ...s };
    delete base.oneOf;
    delete base.anyOf;
    return union(alts.map((a) => schemaType({ ...stripType(base), ...a }, ref, indent)));
  }
  if (Array.isArray(s.type)) return union(s.type.map((t) => single(t, s, ref, indent)));
  if (s.type) return single(s.type, s, ref, indent);
  if (s.properties) return objectType(s, ref, indent);
  return 'unknown';
}

/** What an alternative inherits from its parent: nothing that describes the parent alone. */
function stripType(base) {
  const out = { ...base };
  for (const k of ['description', 'title', '$schema', '$id', 'default']) delete out[k];
  return out;
}

// House-size rules of our own (issue 35): ESLint has max-lines-per-function for long functions but nothing
// that counts a class's fields, and a class with many fields is a class doing many jobs. Local, not a plugin
// package: one small rule does not earn a dependency.

/** Most fields a class may hold (issue 35): more, and the fields that belong together want an object of their own. */
export const MAX_CLASS_FIELDS = 20;

/** A class's fields: its property definitions (instance and static) and its constructor's parameter properties. */
function fieldCount(body) {
  let n = 0;
  for (const m of body.body) {
    if (m.type === 'PropertyDefinition' || m.type === 'AccessorProperty') n++;
    else if (m.type === 'MethodDefinition' && m.kind === 'constructor') n += m.value.params.filter((p) => p.type === 'TSParameterProperty').length;
  }
  return n;
}

const maxClassFields = {
  meta: {
    type: 'suggestion',
    docs: { description: `At most ${MAX_CLASS_FIELDS} fields (property definitions and constructor parameter properties) per class` },
    schema: [{ type: 'object', properties: { max: { type: 'integer', minimum: 0 } }, additionalProperties: false }],
    messages: {
      tooMany:
        '{{name}} has {{count}} fields (property definitions and constructor parameter properties); at most {{max}}: group the ones that belong together into a small object',
    },
  },
  create(context) {
    const max = context.options[0]?.max ?? MAX_CLASS_FIELDS;
    const check = (node) => {
      const count = fieldCount(node.body);
      if (count <= max) return;
      const name = node.id?.name === undefined ? 'An anonymous class' : `Class '${node.id.name}'`;
      context.report({ node: node.id ?? node, messageId: 'tooMany', data: { name, count: String(count), max: String(max) } });
    };
    return { ClassDeclaration: check, ClassExpression: check };
  },
};

/** The plugin eslint.config.js registers as `house`. */
export const housePlugin = { meta: { name: 'sits-house' }, rules: { 'max-class-fields': maxClassFields } };

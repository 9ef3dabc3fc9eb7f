// The "next" API: strings are automerge text, edited with splice.
const A = require('@automerge/automerge').next;
const fs = require('fs');
const [,, inFile, outFile, text] = process.argv;
let doc = A.load(new Uint8Array(fs.readFileSync(inFile)));
doc = A.change(doc, { message: JSON.stringify({ a: 'js-peer', op: 'append_text' }) }, d => {
  A.splice(d, ['content'], d.content.length, 0, text);
});
fs.writeFileSync(outFile, A.saveIncremental(doc));
console.log(JSON.stringify({ content: doc.content }));

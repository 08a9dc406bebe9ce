/*
 * The batch-script reader and the GPU request, without SLURM: exact words
 * out of scripts as people write them, and the bounds on hostile ones.
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_script.h"
#include "request.h"

static const char *const gpt[] = {"pretrain_gpt.py", NULL};

static struct m4s_script rd(const char *text, const char *const *env, const char *const *args)
{
    struct m4s_script s;
    ck_assert_int_eq(m4s_read_script(text, strlen(text), gpt, env, args, &s), 0);
    return s;
}

/* The words joined by '|', for one comparison. */
static const char *joined(const struct m4s_script *s)
{
    static char buf[4096];
    buf[0] = '\0';
    for (int i = 0; i < s->argc; i++) {
        strcat(buf, i ? "|" : "");
        strcat(buf, s->argv[i]);
    }
    ck_assert_ptr_null(s->argv ? s->argv[s->argc] : NULL);
    return buf;
}

START_TEST(continuation_quotes_variables)
{
    struct m4s_script s = rd("#!/bin/bash\n"
                             "#SBATCH --gres=gpu:h100:8\n"
                             "TP=2; SEQ=\"8192\"\n"
                             "NAME='my run'\n"
                             "torchrun --nproc_per_node 8 /opt/m/pretrain_gpt.py \\\n"
                             "    --num-layers 32 --seq-length ${SEQ} \\\n"
                             "    --tensor-model-parallel-size=$TP --wandb-exp-name \"$NAME x\" 2>&1 | tee log\n"
                             "echo done\n",
                             NULL, NULL);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_uint_eq(s.line, 5);
    ck_assert_str_eq(joined(&s),
                     "--num-layers|32|--seq-length|8192|--tensor-model-parallel-size=2|--wandb-exp-name|my run x");
    m4s_script_free(&s);
}
END_TEST

START_TEST(arrays_and_splitting)
{
    struct m4s_script s = rd("A=(\n  --num-layers 80   # layers\n  --hidden-size 8192\n)\n"
                             "A+=(--swiglu)\n"
                             "B=\"--bf16 --use-flash-attn\"\n"
                             "B+=\" --sequence-parallel\"\n"
                             "srun python pretrain_gpt.py \"${A[@]}\" $B \"$B\" ${A[1]}\n",
                             NULL, NULL);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_str_eq(joined(&s), "--num-layers|80|--hidden-size|8192|--swiglu|--bf16|--use-flash-attn|"
                                 "--sequence-parallel|--bf16 --use-flash-attn --sequence-parallel|80");
    m4s_script_free(&s);
}
END_TEST

/* Expected words are bash 5.2's, printed with printf '[%s] '. */
START_TEST(expansion_as_bash_does)
{
    struct m4s_script s = rd("A=\"  lead trail  \"\nE=\"\"\ndeclare -a ARR=(one \"two words\" three)\n"
                             "export X=1 Y=\"a b\"\n"
                             "torchrun pretrain_gpt.py pre$A\"post\" $E \"$E\" x${A}y \"${ARR[@]}\" \"p${ARR[@]}q\" "
                             "${ARR[*]} \"${ARR[*]}\" $X $Y \"$Y\" ${NOPE:-def ault} \"${NOPE:-def ault}\" ${X:+alt} "
                             "'$X' \\$X a\\ b ${NOPE:+x} \"${NOPE+y}\" ${E:+z} ${E+w}\n",
                             NULL, NULL);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_str_eq(joined(&s), "pre|lead|trail|post||x|lead|trail|y|one|two words|three|pone|two words|threeq|"
                                 "one|two|words|three|one two words three|1|a|b|a b|def|ault|def ault|alt|$X|$X|"
                                 "a b||w");
    m4s_script_free(&s);
}
END_TEST

START_TEST(directive_wins)
{
    struct m4s_script s = rd("#!/bin/bash\n"
                             "#MEM4D --hf-config /models/llama/config.json --model llama3-8b\n"
                             "#MEM4D --tensor-model-parallel-size 4 --seq-length=4096\n"
                             "torchrun pretrain_gpt.py --tensor-model-parallel-size 8\n",
                             NULL, NULL);
    ck_assert_int_eq(s.found, M4S_FOUND_DIRECTIVE);
    ck_assert_uint_eq(s.line, 2);
    ck_assert_str_eq(s.hf_config, "/models/llama/config.json");
    ck_assert_str_eq(s.model, "llama3-8b");
    ck_assert_str_eq(joined(&s), "--tensor-model-parallel-size|4|--seq-length=4096");
    m4s_script_free(&s);
}
END_TEST

START_TEST(no_training_command)
{
    const char *texts[] = {
        "#!/bin/bash\npython preprocess.py --input x\n",
        "echo pretrain_gpt.py --num-layers 2\n",
        "cp /opt/m/pretrain_gpt.py /tmp/ && ls -l pretrain_gpt.py\n",
        "for f in pretrain_gpt.py; do :; done\n",
        "# torchrun pretrain_gpt.py --num-layers 2\n",
        "cat <<EOF > run.sh\ntorchrun pretrain_gpt.py --num-layers 2\nEOF\nbash run.sh\n",
        "",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        struct m4s_script s = rd(texts[i], NULL, NULL);
        ck_assert_msg(s.found == M4S_FOUND_NONE, "text %zu: found %d", i, (int)s.found);
        ck_assert_int_eq(s.argc, 0);
        m4s_script_free(&s);
    }
}
END_TEST

START_TEST(unresolved_references)
{
    /* A value after a flag is taken as that flag's value... */
    struct m4s_script s = rd("CKPT=$(date +%s)\ntorchrun pretrain_gpt.py --save $CKPT --data-path ${DATA} "
                             "--load=$1 --num-layers 2\n",
                             NULL, NULL);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_str_eq(joined(&s), "--save|$CKPT|--data-path|${DATA}|--load=$1|--num-layers|2");
    m4s_script_free(&s);
    /* ...anywhere else it may hold flags. */
    const char *texts[] = {
        "torchrun pretrain_gpt.py $MODEL_ARGS --num-layers 2\n",
        "torchrun pretrain_gpt.py --num-layers 2 `cat args`\n",
        "X=$(cat args)\ntorchrun pretrain_gpt.py --bf16 2 \"$X\"\n",
        "#MEM4D --num-layers 2 $EXTRA\n",
    };
    const char *names[] = {"$MODEL_ARGS", "`cat args`", "$X", "$EXTRA"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        s = rd(texts[i], NULL, NULL);
        ck_assert_msg(s.found == M4S_FOUND_UNREADABLE, "text %zu: found %d", i, (int)s.found);
        ck_assert_msg(strstr(s.why, names[i]), "text %zu: '%s' lacks %s", i, s.why, names[i]);
        ck_assert_int_eq(s.argc, 0);
        m4s_script_free(&s);
    }
}
END_TEST

START_TEST(environment_defaults_arguments)
{
    const char *env[] = {"TP=4", "HOME=/root", NULL};
    const char *args[] = {"job.sh", "96", NULL};
    struct m4s_script s = rd("PP=${PP:-2}\nL=$1\ntorchrun pretrain_gpt.py --tensor-model-parallel-size $TP "
                             "--pipeline-model-parallel-size $PP --num-layers $L --cp ${CP:-${TP}}\n",
                             env, args);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_str_eq(joined(&s), "--tensor-model-parallel-size|4|--pipeline-model-parallel-size|2|--num-layers|"
                                 "96|--cp|4");
    m4s_script_free(&s);
}
END_TEST

START_TEST(command_inside_a_word)
{
    struct m4s_script s = rd("M=\"--num-layers 80 --hidden-size 8192\"\n"
                             "srun bash -c \"torchrun --nnodes \\$SLURM_NNODES pretrain_gpt.py $M --bf16\"\n",
                             NULL, NULL);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_str_eq(joined(&s), "--num-layers|80|--hidden-size|8192|--bf16");
    m4s_script_free(&s);
}
END_TEST

START_TEST(other_script_names_and_crlf)
{
    static const char *const mine[] = {"train_llama.py", "pretrain_gpt.py", NULL};
    const char *text = "A=1\r\nexport B=\"--swiglu\" C=2\r\n"
                       "if true; then CUDA_DEVICE_MAX_CONNECTIONS=1 python3 ./train_llama.py $B --x $A; fi\r\n";
    struct m4s_script s;
    ck_assert_int_eq(m4s_read_script(text, strlen(text), mine, NULL, NULL, &s), 0);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_str_eq(joined(&s), "--swiglu|--x|1");
    m4s_script_free(&s);
}
END_TEST

START_TEST(bounded_on_hostile_scripts)
{
    /* Each variable doubles the last: 2^40 bytes if followed. */
    char text[4096] = "A=xxxxxxxxxxxxxxxx\n";
    char prev = 'A';
    for (char v = 'B'; v <= 'Z'; v++) {
        char line[64];
        snprintf(line, sizeof line, "%c=\"$%c$%c\"\n", v, prev, prev);
        strcat(text, line);
        prev = v;
    }
    strcat(text, "torchrun pretrain_gpt.py $Z\n");
    struct m4s_script s = rd(text, NULL, NULL);
    ck_assert_int_eq(s.found, M4S_FOUND_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(s.why, "exceeds"));
    m4s_script_free(&s);
    /* Unterminated quotes, a lone $, a NUL inside: read up to the end. */
    const char odd[] = "torchrun pretrain_gpt.py --num-layers \"2 ${A\0 --hidden-size 4";
    ck_assert_int_eq(m4s_read_script(odd, sizeof odd - 1, gpt, NULL, NULL, &s), 0);
    ck_assert_int_eq(s.found, M4S_FOUND_COMMAND);
    ck_assert_str_eq(joined(&s), "--num-layers|2 ${A");
    m4s_script_free(&s);
    s = rd("torchrun pretrain_gpt.py --x $", NULL, NULL);
    ck_assert_str_eq(joined(&s), "--x|$");
    m4s_script_free(&s);
    m4s_script_free(NULL);
}
END_TEST

static struct m4s_request req(const char *job, const char *node, const char *task, uint32_t nodes,
                              uint32_t tasks, uint16_t per_node)
{
    struct m4s_job_fields f = {.tres_per_job = job, .tres_per_node = node, .tres_per_task = task,
                               .min_nodes = nodes, .num_tasks = tasks, .ntasks_per_node = per_node};
    struct m4s_request r;
    m4s_request_from_job(&f, &r);
    return r;
}

START_TEST(gpu_requests)
{
    const uint32_t NV = 0xfffffffeu;
    struct m4s_request r = req(NULL, "gres:gpu:h100:8", NULL, 4, NV, 0xfffe);
    ck_assert_uint_eq(r.gpus, 32);
    ck_assert_str_eq(r.gpu_type, "h100");
    r = req(NULL, "gres:gpu:8", NULL, NV, NV, 0xfffe); /* no -N: one node */
    ck_assert_uint_eq(r.gpus, 8);
    ck_assert_str_eq(r.gpu_type, "");
    r = req("gres:gpu:a100:16", "gres:gpu:8", NULL, 4, NV, 0xfffe); /* --gpus wins */
    ck_assert_uint_eq(r.gpus, 16);
    ck_assert_str_eq(r.gpu_type, "a100");
    r = req(NULL, "gres:nic:1,gres:gpu:h100", NULL, 2, NV, 0xfffe);
    ck_assert_uint_eq(r.gpus, 2);
    r = req(NULL, NULL, "gres:gpu:1", 2, NV, 4); /* --gpus-per-task with 4 tasks a node */
    ck_assert_uint_eq(r.gpus, 8);
    r = req(NULL, NULL, NULL, 2, 16, 0xfffe); /* no GPUs named: a GPU a task */
    ck_assert_uint_eq(r.gpus, 16);
    r = req(NULL, NULL, "gres:gpu:1", 2, NV, 0xfffe);
    ck_assert_uint_eq(r.gpus, 0);
    ck_assert_ptr_nonnull(strstr(r.why, "--gpus-per-task"));
    r = req(NULL, "gres:gpu:h100:8:x", NULL, 1, NV, 0xfffe);
    ck_assert_uint_eq(r.gpus, 0);
    ck_assert_ptr_nonnull(strstr(r.why, "gres:gpu:h100:8:x"));
    r = req(NULL, NULL, NULL, 1, NV, 0xfffe);
    ck_assert_uint_eq(r.gpus, 0);
    ck_assert_str_eq(r.why, "the job requests no GPUs and no task count");
    /* a count beyond 32 bits is no count the plugin reads, not a GPU type
     * named "99999999999" of one GPU a node (nor a type "4294967296" of 2^32) */
    static const char *const huge[] = {"gres:gpu:99999999999", "gres:gpu:4294967296", "gres:gpu:h100:4294967296"};
    for (size_t i = 0; i < sizeof huge / sizeof *huge; i++) {
        r = req(NULL, huge[i], NULL, 4, NV, 0xfffe);
        ck_assert_msg(r.gpus == 0 && strstr(r.why, "is not one the plugin reads"), "%s: %llu GPUs of type '%s'",
                      huge[i], (unsigned long long)r.gpus, r.gpu_type);
    }
    r = req(NULL, "gres:gpu:4294967295", NULL, 1, NV, 0xfffe);
    ck_assert_uint_eq(r.gpus, 4294967295u);
    ck_assert_str_eq(r.gpu_type, "");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("slurm-batch-script");
    TCase *tc = tcase_create("reader");
    tcase_add_test(tc, continuation_quotes_variables);
    tcase_add_test(tc, arrays_and_splitting);
    tcase_add_test(tc, expansion_as_bash_does);
    tcase_add_test(tc, directive_wins);
    tcase_add_test(tc, no_training_command);
    tcase_add_test(tc, unresolved_references);
    tcase_add_test(tc, environment_defaults_arguments);
    tcase_add_test(tc, command_inside_a_word);
    tcase_add_test(tc, other_script_names_and_crlf);
    tcase_add_test(tc, bounded_on_hostile_scripts);
    tcase_add_test(tc, gpu_requests);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

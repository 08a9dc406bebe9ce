/*
 * job_submit/mem4d driven as slurmctld drives it, without slurmctld:
 * init() with good and garbled configurations, job_submit() on the example
 * jobs and on odd requests, job_modify() on size changes, fini(). The fakes
 * (fake_slurm.c) abort on an err_msg SLURM's xfree could not free, and count
 * SLURM blocks; run it under ASan or valgrind for the rest.
 *   test-job-submit EXAMPLES_DIR
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm_errno.h>

#include "fake_slurm.h"

static const char *examples = "contrib/slurm/examples";
static char dir[64];
static char conf_path[128];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static char *example(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", examples, name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = calloc(1, 1 << 16);
    ck_assert_ptr_nonnull(buf);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void start(const char *conf)
{
    write_file(conf_path, conf);
    fake_slurm_conf_dir = dir;
    fake_slurm_last_error[0] = '\0';
    ck_assert_msg(init() == SLURM_SUCCESS, "init: %s", fake_slurm_last_error);
}

static void stop(void)
{
    ck_assert_int_eq(fini(), SLURM_SUCCESS);
    ck_assert_int_eq(fake_slurm_live_blocks, 0);
}

/* Submit a script with a request; returns job_submit()'s status and the
 * message (or ""), checking err_msg's ownership on the way. */
static int submit_env(const char *script, const char *gres, uint32_t nodes, char **env, uint32_t nenv, char *msg,
                      size_t size)
{
    job_desc_msg_t jd;
    fake_job_desc_init(&jd);
    jd.environment = env;
    jd.env_size = nenv;
    jd.script = (char *)script;
    jd.tres_per_node = (char *)gres;
    jd.min_nodes = nodes;
    jd.partition = "gpu";
    jd.name = "test";
    char *err = NULL;
    int rc = job_submit(&jd, 1000, &err);
    snprintf(msg, size, "%s", err ? err : "");
    if (rc == SLURM_SUCCESS)
        ck_assert_ptr_null(err);
    else
        ck_assert_msg(err && !strchr(err, '\n'), "a rejection is one line: %s", err ? err : "(none)");
    fake_xfree(&err); /* aborts unless SLURM's allocator made it */
    return rc;
}

static int submit(const char *script, const char *gres, uint32_t nodes, char *msg, size_t size)
{
    return submit_env(script, gres, nodes, NULL, 0, msg, size);
}

static int submit_example(const char *name, const char *gres, uint32_t nodes, char *msg, size_t size)
{
    char *s = example(name);
    int rc = submit(s, gres, nodes, msg, size);
    free(s);
    return rc;
}

#define HAS(msg, text) ck_assert_msg(strstr(msg, text) != NULL, "'%s' lacks '%s'", msg, text)

static const char conf_admit[] = "# test\ngres.h100 = h100-80\npartition.gpu = h100-80\npolicy = admit\n";

START_TEST(examples_decide)
{
    char m[2048];
    start(conf_admit);
    ck_assert_int_eq(submit_example("llama3-8b.sbatch", "gres:gpu:h100:8", 1, m, sizeof m), SLURM_SUCCESS);
    HAS(fake_slurm_last_info, "fits, admitted: mem4d: fits on 8 h100-80 GPUs: pipeline stage 0 needs");

    ck_assert_int_eq(submit_example("llama3-70b.sbatch", "gres:gpu:h100:8", 4, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "mem4d: this job would run out of GPU memory: pipeline stage 0 needs ");
    HAS(m, "one h100-80 GPU has 80.00 GiB (85899345920 bytes)");
    HAS(m, "; on these 32 GPUs this layout fits (");
    HAS(m, "--tensor-model-parallel-size ");
    HAS(m, "--pipeline-model-parallel-size ");

    ck_assert_int_eq(submit_example("bad-tp.sbatch", "gres:gpu:h100:6", 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "mem4d: this job's parallel layout is invalid (attention heads not divisible by tensor-parallel size): "
           "32 attention heads are not divisible by tp 3");

    ck_assert_int_eq(submit_example("no-training.sbatch", "gres:gpu:h100:1", 1, m, sizeof m), SLURM_SUCCESS);
    ck_assert_int_eq(submit_example("unreadable.sbatch", "gres:gpu:h100:8", 1, m, sizeof m), SLURM_SUCCESS);
    HAS(fake_slurm_last_info, "unknown, admitted: mem4d: cannot check this job's GPU memory: the training command "
                              "on line 13 uses $MODEL_ARGS");
    ck_assert_int_eq(submit_example("llama3-70b-pp2.sbatch", "gres:gpu:h100:8", 4, m, sizeof m), SLURM_SUCCESS);
    /* The same 70B job on 2 nodes: out of memory, and nothing fits there. */
    ck_assert_int_eq(submit_example("llama3-70b-pp2.sbatch", "gres:gpu:h100:8", 2, m, sizeof m),
                     ESLURM_ACCESS_DENIED);
    HAS(m, "would run out of GPU memory");
    stop();
}
END_TEST

/* The job runs with the environment it was submitted with (sbatch exports
 * the submitter's): with the caching allocator's expandable segments
 * nothing is reserved beyond what is allocated, and the 70B job on 2 nodes
 * that is out of memory by 0.2% without them (80.15 of 80 GiB) is tight
 * (77.11 GiB), as `mem4d check` in the job says. */
START_TEST(job_environment)
{
    char m[2048];
    char alloc[] = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", path[] = "PATH=/usr/bin";
    char *env[] = {path, alloc};
    start(conf_admit);
    char *s = example("llama3-70b-pp2.sbatch");
    ck_assert_int_eq(submit_env(s, "gres:gpu:h100:8", 2, env, 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "would run out of GPU memory: pipeline stage 0 needs 80.15 GiB");
    ck_assert_int_eq(submit_env(s, "gres:gpu:h100:8", 2, env, 2, m, sizeof m), SLURM_SUCCESS);
    HAS(fake_slurm_last_info, "fits, admitted: mem4d: tight on 16 h100-80 GPUs: pipeline stage 0 needs 77.11 GiB");
    free(s);
    stop();
}
END_TEST

START_TEST(policy_and_strict)
{
    char m[2048];
    start("gres.h100 = h100-80\npolicy = reject\nstrict = yes\n");
    ck_assert_int_eq(submit_example("unreadable.sbatch", "gres:gpu:h100:8", 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "$MODEL_ARGS");
    HAS(m, "(policy = reject)");
    /* tp 8 x pp 4 on 32 GPUs at sequence 10240: about 87.8% of memory, "tight"
     * (above full mode's 85% margin; at 8192 it is 80.4%, which now fits). */
    const char *tight = "torchrun pretrain_gpt.py --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 "
                        "--num-attention-heads 64 --group-query-attention --num-query-groups 8 --seq-length 10240 "
                        "--max-position-embeddings 10240 --vocab-size 128256 --swiglu --normalization RMSNorm "
                        "--untie-embeddings-and-output-weights --position-embedding-type rope --disable-bias-linear "
                        "--bf16 --use-flash-attn --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 "
                        "--sequence-parallel --use-distributed-optimizer --recompute-activations "
                        "--micro-batch-size 1 --global-batch-size 128\n";
    ck_assert_int_eq(submit(tight, "gres:gpu:h100:8", 4, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "above the 85% safety margin (strict = yes)");
    /* No GPU type and no partition mapping: the policy. */
    ck_assert_int_eq(submit(tight, "gres:gpu:8", 4, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "no device for GPU type ''");
    stop();
    start("gres.h100 = h100-80\n");
    ck_assert_int_eq(submit(tight, "gres:gpu:h100:8", 4, m, sizeof m), SLURM_SUCCESS);
    HAS(fake_slurm_last_info, "fits, admitted: mem4d: tight on 32 h100-80 GPUs");
    stop();
}
END_TEST

START_TEST(odd_requests)
{
    char m[2048];
    start("device.big = h100-80 memory_bytes=1099511627776\ndefault_device = big\npolicy = reject\n");
    char *s8 = example("llama3-8b.sbatch");
    /* A custom 1 TiB device: the 8B job (tp 2) fits two GPUs. */
    ck_assert_msg(submit(s8, "gres:gpu:2", 1, m, sizeof m) == SLURM_SUCCESS, "%s", m);
    HAS(fake_slurm_last_info, "on 2 big GPUs");
    ck_assert_int_eq(submit(s8, NULL, 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "the job requests no GPUs and no task count");
    ck_assert_int_eq(submit(s8, "gres:gpu:h100:x:9", 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "is not one the plugin reads");
    ck_assert_int_eq(submit(NULL, "gres:gpu:8", 1, m, sizeof m), SLURM_SUCCESS); /* no script */
    free(s8);
    /* The model from a HF config.json (#MEM4D), the layout from flags. */
    char json[128], script[512];
    snprintf(json, sizeof json, "%s/config.json", dir);
    write_file(json, "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"intermediate_size\": 14336, "
                     "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
                     "\"vocab_size\": 128256, \"tie_word_embeddings\": false, \"max_position_embeddings\": 8192}");
    snprintf(script, sizeof script, "#!/bin/bash\n#MEM4D --hf-config %s --seq-length 8192 --bf16 "
             "--tensor-model-parallel-size 2 --micro-batch-size 1\npython train.py\n", json);
    ck_assert_int_eq(submit(script, "gres:gpu:8", 1, m, sizeof m), SLURM_SUCCESS);
    HAS(fake_slurm_last_info, "on 8 big GPUs");
    snprintf(script, sizeof script, "#MEM4D --hf-config %s/missing.json --seq-length 8192\n", dir);
    ck_assert_int_eq(submit(script, "gres:gpu:8", 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "missing.json: No such file or directory");
    ck_assert_int_eq(submit("#MEM4D --hf-config /dev/zero --seq-length 8192\n", "gres:gpu:8", 1, m, sizeof m),
                     ESLURM_ACCESS_DENIED);
    HAS(m, "is not a regular file");
    ck_assert_int_eq(submit("#MEM4D --model llama3-8b --seq-length 8192 --tensor-model-parallel-size 16\n",
                            "gres:gpu:8", 1, m, sizeof m),
                     ESLURM_ACCESS_DENIED);
    HAS(m, "layout is invalid");
    ck_assert_int_eq(submit("#MEM4D --model llama9 --seq-length 8192\n", "gres:gpu:8", 1, m, sizeof m),
                     ESLURM_ACCESS_DENIED);
    HAS(m, "--model llama9 on line 1 is not a model preset");
    ck_assert_int_eq(submit("#MEM4D --num-layers x\n", "gres:gpu:8", 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "'x' is not a whole number");
    ck_assert_int_eq(submit("#MEM4D --num-layers 4\n", "gres:gpu:8", 1, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "do not describe a whole model");
    unlink(json);
    stop();
}
END_TEST

START_TEST(configuration_keys)
{
    char m[2048];
    start("gres.h100 = h100-80\nscripts = train_llama.py other.py\npropose = no\nhf_config = no\n");
    char *s70 = example("llama3-70b.sbatch");
    /* pretrain_gpt.py is no longer a training script here. */
    ck_assert_int_eq(submit(s70, "gres:gpu:h100:8", 4, m, sizeof m), SLURM_SUCCESS);
    char *renamed = strdup(s70);
    ck_assert_ptr_nonnull(renamed);
    char *at = strstr(renamed, "pretrain_gpt.py");
    ck_assert_ptr_nonnull(at);
    memcpy(at, "train_llama.py ", 15);
    ck_assert_int_eq(submit(renamed, "gres:gpu:h100:8", 4, m, sizeof m), ESLURM_ACCESS_DENIED);
    HAS(m, "would run out of GPU memory");
    ck_assert_ptr_null(strstr(m, "layout fits")); /* propose = no */
    ck_assert_int_eq(submit("#MEM4D --hf-config /etc/x.json --seq-length 8\n", "gres:gpu:h100:8", 1, m, sizeof m),
                     SLURM_SUCCESS);
    HAS(fake_slurm_last_info, "--hf-config is turned off (hf_config = no)");
    free(renamed);
    free(s70);
    stop();
}
END_TEST

START_TEST(modify_rechecks_size)
{
    start(conf_admit);
    struct fake_job job;
    fake_job_desc_init(&job.desc);
    job.script = example("llama3-70b-pp2.sbatch");
    job.desc.tres_per_node = "gres:gpu:h100:8";
    job.desc.min_nodes = 4;
    job.desc.partition = "gpu";
    job.desc.name = "llama3-70b-pp2";
    job.desc.user_id = 1000;
    job_desc_msg_t upd;
    fake_job_desc_init(&upd);
    upd.min_nodes = 2;
    ck_assert_int_eq(job_modify(&upd, (struct job_record *)&job, 1000), ESLURM_ACCESS_DENIED);
    HAS(fake_slurm_last_info, "modify uid=1000 name=llama3-70b-pp2 partition=gpu gpus=16 type=h100: oom, rejected");
    upd.min_nodes = 8;
    ck_assert_int_eq(job_modify(&upd, (struct job_record *)&job, 1000), SLURM_SUCCESS);
    fake_job_desc_init(&upd);
    upd.tres_per_node = "gres:gpu:h100:4";
    ck_assert_int_eq(job_modify(&upd, (struct job_record *)&job, 1000), ESLURM_ACCESS_DENIED);
    fake_job_desc_init(&upd);
    upd.time_limit = 60; /* not a size change: not looked at */
    fake_slurm_last_info[0] = '\0';
    ck_assert_int_eq(job_modify(&upd, (struct job_record *)&job, 1000), SLURM_SUCCESS);
    ck_assert_str_eq(fake_slurm_last_info, "");
    free((char *)job.script);
    stop();
}
END_TEST

START_TEST(garbled_configurations)
{
    static const char *const bad[][2] = {
        {"policy = sometimes\n", "mem4d.conf:1: policy = 'sometimes': the value must be admit or reject"},
        {"# ok\n\ngres.h100 = h200-999\n", "mem4d.conf:3: gres.h100 = 'h200-999': not a device defined above nor a preset"},
        {"strict\n", "mem4d.conf:1: 'strict' is not KEY = VALUE"},
        {"colour = blue\n", "mem4d.conf:1: unknown key 'colour'"},
        {"device.x = h100-80 memory_bytes=lots\n", "mem4d.conf:1: device.x: memory_bytes=lots:"},
        {"scripts = \n", "mem4d.conf:1: 'scripts = ' is not KEY = VALUE"},
    };
    fake_slurm_conf_dir = dir;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_file(conf_path, bad[i][0]);
        fake_slurm_last_error[0] = '\0';
        ck_assert_int_eq(init(), SLURM_ERROR);
        HAS(fake_slurm_last_error, "job_submit/mem4d: bad configuration: ");
        HAS(fake_slurm_last_error, bad[i][1]);
        ck_assert_int_eq(fake_slurm_live_blocks, 0);
    }
    /* No file: the defaults, and the plugin loads. */
    unlink(conf_path);
    ck_assert_int_eq(init(), SLURM_SUCCESS);
    HAS(fake_slurm_last_info, "no ");
    stop();
}
END_TEST

int main(int argc, char **argv)
{
    if (argc > 1)
        examples = argv[1];
    snprintf(dir, sizeof dir, "/tmp/test-job-submit-XXXXXX");
    if (!mkdtemp(dir))
        return EXIT_FAILURE;
    snprintf(conf_path, sizeof conf_path, "%s/mem4d.conf", dir);
    Suite *s = suite_create("slurm-plugin");
    TCase *tc = tcase_create("plugin");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, examples_decide);
    tcase_add_test(tc, job_environment);
    tcase_add_test(tc, policy_and_strict);
    tcase_add_test(tc, odd_requests);
    tcase_add_test(tc, configuration_keys);
    tcase_add_test(tc, modify_rechecks_size);
    tcase_add_test(tc, garbled_configurations);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    unlink(conf_path);
    rmdir(dir);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#ifndef STORM_TEST_SUITES_H
#define STORM_TEST_SUITES_H
void add_nodeset_suite(void);
void add_tree_suite(void);
void add_wire_suite(void);
void add_config_suite(void);
void add_cli_suite(void);
void add_matrix_suite(void);
void add_ckpt_image_suite(void);
void add_ckpt_files_suite(void);
void add_bcs_suite(void);
void add_db_suite(void);
void add_auth_suite(void);
void add_evloop_suite(void);
void add_fault_suite(void);
void add_slurmopt_suite(void);
void add_pmi_suite(void);
#endif
